"""The selective-reduce paper: its simulations (Figs. 5-14) and small real runs of the
all-reduce family."""
