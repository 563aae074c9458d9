/* Agreement over MPI_MIN: statuses are 0 or negative, so the minimum is the
 * failure every rank reports; its message comes from the first rank that
 * had one. */
#include "base/agree.h"

#include <limits.h>

#include "ftrt.h"

int ft__agree(MPI_Comm comm, int status) {
  int agreed = status;
  if (MPI_Allreduce(&status, &agreed, 1, MPI_INT, MPI_MIN, comm) !=
      MPI_SUCCESS)
    return FT_EMPI;
  return agreed;
}

int ft__agree_msg(MPI_Comm comm, int status, char *msg, size_t msglen) {
  int agreed = ft__agree(comm, status);
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
