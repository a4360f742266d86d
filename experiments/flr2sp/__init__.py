"""The FL-R²SP paper (federated): one module per table or figure it reproduces (Tables II, IV,
V, Figs. 15-18, the C sweep, the outlier filter) plus our paper-size and robustness items."""
