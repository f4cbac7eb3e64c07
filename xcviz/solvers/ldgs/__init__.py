"""LDGS (Bhatia et al.): loss-decomposition guided search over an embedding of the classes."""
