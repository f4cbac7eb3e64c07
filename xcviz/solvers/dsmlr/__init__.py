"""DS-MLR (Raman et al.): doubly separable multinomial logistic regression on threads or Dask."""
