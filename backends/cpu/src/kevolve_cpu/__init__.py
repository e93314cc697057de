"""kevolve-cpu: the CPU backend plugin for kevolve."""
