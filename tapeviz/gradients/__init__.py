"""Stage 2, gradients: how the gradient flowed back, edge by edge, and why it stopped where it did."""
