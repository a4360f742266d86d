"""Experiments reproducing the papers this project implements, one package per study.

* :mod:`experiments.flr2sp`: the FL-R²SP paper (federated mode);
* :mod:`experiments.r2sp_cluster`: the R²SP paper (cluster mode: twin and real runs);
* :mod:`experiments.selective`: the selective-reduce paper (cluster mode);
* :mod:`experiments.dssync`: the DS-Sync paper (cluster mode);
* :mod:`experiments.osp`: the OSP paper (cluster mode);
* :mod:`experiments.common`: the run cache, settings, provenance, verdict rules, cells.

One module per item: ``python -m experiments.<study>.<item>``; ``python -m experiments.report``
writes ``REPORT.md``, each study rendering its own section. The commands of the
old flat layout run through ``python -m experiments.moved OLD_NAME``. The item table is
experiments/README.md.
"""
