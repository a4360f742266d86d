"""``python -m experiments.selective``, the flat layout's command: every item of the study."""

from experiments.selective.run import main

main()
