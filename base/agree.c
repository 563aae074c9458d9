/* Agreement over MPI_MIN: statuses are 0 or negative, so the minimum is the
 * failure every rank reports; its message comes from the first rank that
 * had one. */
#include "base/agree.h"

#include <limits.h>
#include <math.h>

#include "base/pulse.h"
#include "ftrt.h"

static int agree(MPI_Comm comm, int status, int napping) {
  int agreed = status;
  MPI_Request req;
  if (!napping)
    return MPI_Allreduce(&status, &agreed, 1, MPI_INT, MPI_MIN, comm) ==
                   MPI_SUCCESS
               ? agreed
               : FT_EMPI;
  if (MPI_Iallreduce(&status, &agreed, 1, MPI_INT, MPI_MIN, comm, &req) !=
      MPI_SUCCESS)
    return FT_EMPI;
  return ft__pulse_wait_plain(&req, HUGE_VAL, FT_PULSE_NAP_SHORT) == FT_OK
             ? agreed
             : FT_EMPI;
}

int ft__agree(MPI_Comm comm, int status) { return agree(comm, status, 0); }

int ft__agree_napping(MPI_Comm comm, int status) {
  return agree(comm, status, 1);
}

static int agree_msg(MPI_Comm comm, int status, char *msg, size_t msglen,
                     int napping) {
  int agreed = agree(comm, status, napping);
  if (agreed == FT_OK || !msg || msglen == 0 || msglen > INT_MAX)
    return agreed;
  int rank, first;
  MPI_Comm_rank(comm, &rank);
  int mine = status != FT_OK && msg[0] ? rank : INT_MAX;
  if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
    return FT_EMPI;
  if (first != INT_MAX &&
      MPI_Bcast(msg, (int)msglen, MPI_CHAR, first, comm) != MPI_SUCCESS)
    return FT_EMPI;
  return agreed;
}

int ft__agree_msg(MPI_Comm comm, int status, char *msg, size_t msglen) {
  return agree_msg(comm, status, msg, msglen, 0);
}

int ft__agree_msg_napping(MPI_Comm comm, int status, char *msg, size_t msglen) {
  return agree_msg(comm, status, msg, msglen, 1);
}
