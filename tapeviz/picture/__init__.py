"""Stage 3, picture: what is shown, where it is placed and how it is styled, as plain data."""
