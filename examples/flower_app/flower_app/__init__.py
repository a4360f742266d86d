"""flower-app: a Flower app (PyTorch MLP on scikit-learn's digits) that switches strategy."""
