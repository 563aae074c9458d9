/*
 * Slurm's requeue of a batch job that ft-launch could not recover in its
 * allocation.  A batch job submitted with sbatch --requeue ("Requeue=1"
 * in scontrol show job) whose ft-launch ends unrecoverable there (a lost
 * host and no restart left: 125; the watchdog's verdict, 124; an
 * ft-restore whose host fell silent, 4) is put back in the queue with
 * "scontrol requeue JOBID": its next run, on a new allocation, resumes
 * from the disk tier.  Without --persist nothing is requeued, since a run
 * on other nodes would find nothing to resume from and start afresh; a
 * job ended by the user (a signal) or by the program's own failure is
 * never requeued.
 */
#ifndef FT_LAUNCH_REQUEUE_H
#define FT_LAUNCH_REQUEUE_H

#include "launch/words.h"

/* 1 when ft-launch's exit status code says the job cannot go on in this
 * allocation and a new one may resume it (4, 124, 125). */
int ft__requeue_code(int code);

/* What scontrol show job -o said of the job: 1 when it is a batch job
 * submitted with --requeue (BatchFlag=1 and Requeue=1), else 0. */
int ft__requeue_asked(const char *show_job);

/* For an exit status code of ft-launch in the Slurm batch job job_id
 * (envp: the environment scontrol runs in; persist: --persist, "" when
 * none; restarts: SLURM_RESTART_COUNT, the requeues so far; max:
 * FT_REQUEUE_MAX, default 3, the requeues allowed): asks Slurm, requeues
 * when it should, and appends what to say
 * (one line, no "ft-launch: " before it; nothing when there is nothing to
 * say) to line.  1 when the job was requeued, 0 when not, -1 when
 * scontrol could not be run or failed (line says so). */
int ft__requeue(int code, const char *job_id, const char *persist,
                const char *restarts, const char *max, char *const *envp,
                ft__text_t *line);

#endif
