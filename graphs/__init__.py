"""Search graphs, one module per method; each exports ``graph`` and ``build_graph``."""
