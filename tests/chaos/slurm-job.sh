#!/bin/bash
#SBATCH --nodes=5 --no-kill
# The batch script of tests/chaos/chaos-slurm.sh and of docs/guide.md: 4
# nodes train, the fifth stands by; one recovery.  The job's name is FT_JOB.
ft-launch --nodes 4 --spares 1 --restarts 1 -- \
  ft-train-example --steps 16 --snapshot-every 2 --state-mb 4
