"""The project as a whole: the command line, errors, missing dependencies, packaging, docs and
README examples, lint, the import graph, the benchmark report."""
