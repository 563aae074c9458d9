#!/bin/bash
#SBATCH --nodes=4 --no-kill --requeue
# The requeue case of tests/chaos/chaos-slurm.sh: 4 nodes, no spare, no
# restart in the allocation; a lost node ends ft-launch unrecoverable
# (exit 125) and it asks Slurm to requeue the job, whose next run resumes
# from the disk tier (FT_PERSIST_DIR, a directory every node sees).  The
# test holds the first run at a step to kill a node there (FT_HOLD); a
# requeued run (SLURM_RESTART_COUNT set) is not held.
[ "${SLURM_RESTART_COUNT:-0}" = 0 ] || unset FT_HOLD
echo "run ${SLURM_RESTART_COUNT:-0} of Slurm job $SLURM_JOB_ID on $SLURM_JOB_NODELIST"
ft-launch --nodes 4 -- ft-train-example --steps 16 --snapshot-every 2 --state-mb 4
