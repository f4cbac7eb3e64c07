"""Small helpers every layer may use: atomic file writes, regular-file opening, text made safe for a
page, memory checks. They import nothing else of xcviz."""
