/*
 * The requeue of launch/requeue.h: scontrol show job, then scontrol
 * requeue, each run to its end as $(...) runs it (command.h).
 */
#include "launch/requeue.h"

#include <stdlib.h>
#include <string.h>

#include "ftrt.h"
#include "launch/command.h"
#include "launch/proc.h"

int ft__requeue_code(int code) { return code == 4 || code == 124 || code == 125; }

/* 1 when the blank-separated words of s hold word. */
static int has_word(const char *s, const char *word) {
  size_t n = strlen(word);
  for (const char *p = s; (p = strstr(p, word)) != NULL; p += n)
    if ((p == s || p[-1] == ' ' || p[-1] == '\n') &&
        (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
      return 1;
  return 0;
}

int ft__requeue_asked(const char *show_job) {
  return has_word(show_job, "BatchFlag=1") && has_word(show_job, "Requeue=1");
}

/* scontrol WORDS... JOB_ID: its output into out; FT_OK with its status. */
static int scontrol(char *const *envp, const char *verb, const char *opt,
                    const char *job_id, ft__text_t *out, int *status) {
  ft__text_t prog = FT__TEXT_INIT;
  int found = ft__proc_find(envp, "scontrol", &prog);
  int rc = found < 0 ? FT_ENOMEM : found == 0 ? FT_EIO : FT_OK;
  if (rc == FT_OK) {
    char *argv[6];
    int n = 0;
    argv[n++] = prog.s;
    if (opt)
      argv[n++] = (char *)opt;
    argv[n++] = (char *)verb;
    if (strcmp(verb, "show") == 0)
      argv[n++] = "job";
    argv[n++] = (char *)job_id;
    argv[n] = NULL;
    rc = ft__command_output(argv, envp, 1, out, status);
  }
  ft__text_free(&prog);
  return rc;
}

int ft__requeue(int code, const char *job_id, const char *persist,
                const char *restarts, const char *max, char *const *envp,
                ft__text_t *line) {
  if (!ft__requeue_code(code) || !job_id || !*job_id)
    return 0;
  char *end;
  long done = restarts && *restarts ? strtol(restarts, &end, 10) : 0;
  long most = max && *max ? strtol(max, &end, 10) : 3;
  if (done < 0)
    done = 0;
  if (most < 0)
    most = 0;
  if (done >= most) {
    ft__text_addf(line,
                  "exit %d: unrecoverable in this allocation, but Slurm job "
                  "%s is not requeued again: it was requeued %ld time(s) "
                  "(FT_REQUEUE_MAX=%ld); see what failed above",
                  code, job_id, done, most);
    return 0;
  }
  ft__text_t out = FT__TEXT_INIT;
  int status = 0;
  int rc = scontrol(envp, "show", "-o", job_id, &out, &status);
  if (rc != FT_OK || status != 0) {
    ft__command_chomp(&out);
    ft__text_addf(line,
                  "cannot ask Slurm whether job %s may be requeued "
                  "(scontrol show job: %s): not requeued",
                  job_id, rc != FT_OK ? "not run" : ft__text_str(&out));
    ft__text_free(&out);
    return -1;
  }
  int asked = ft__requeue_asked(ft__text_str(&out));
  int batch = has_word(ft__text_str(&out), "BatchFlag=1");
  ft__text_free(&out);
  if (!asked) {
    if (batch && *persist)
      ft__text_addf(line,
                    "exit %d: unrecoverable in this allocation; had it been "
                    "submitted with sbatch --requeue, Slurm job %s would "
                    "have been requeued to resume from the disk tier (%s)",
                    code, job_id, persist);
    return 0;
  }
  if (!*persist) {
    ft__text_addf(line,
                  "exit %d: unrecoverable in this allocation, but Slurm job "
                  "%s is not requeued: without --persist a run on other "
                  "nodes finds nothing to resume from and would start "
                  "afresh; give ft-launch --persist DIR on a shared file "
                  "system",
                  code, job_id);
    return 0;
  }
  status = 0;
  rc = scontrol(envp, "requeue", NULL, job_id, &out, &status);
  ft__command_chomp(&out);
  if (rc != FT_OK || status != 0) {
    ft__text_addf(line,
                  "exit %d: unrecoverable in this allocation; scontrol "
                  "requeue %s failed (%s): not requeued",
                  code, job_id, rc != FT_OK ? "not run" : ft__text_str(&out));
    ft__text_free(&out);
    return -1;
  }
  ft__text_free(&out);
  ft__text_addf(line,
                "exit %d: unrecoverable in this allocation: Slurm job %s "
                "requeued (it is requeueable: Requeue=1); its next run "
                "resumes from the job's stores left in memory, or from the "
                "disk tier (%s)",
                code, job_id, persist);
  return 1;
}
