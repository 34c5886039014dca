"""``python -m rayslurm ...`` runs the rayslurm binary with those arguments."""

from rayslurm import main

main()
