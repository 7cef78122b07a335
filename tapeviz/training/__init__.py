"""Stage 5, training: gradients watched over a whole training run, in bounded memory."""
