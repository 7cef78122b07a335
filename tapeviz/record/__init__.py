"""Stage 1, record: what the tape saw, as plain records (the only stage touching TF's private APIs)."""
