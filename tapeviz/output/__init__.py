"""Stage 4, output: the picture written as SVG, PNG, GIF or matplotlib artists."""
