"""Stage 6, explorer: live widgets, the what-if sliders and standalone HTML pages."""
