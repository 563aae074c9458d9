# shellcheck shell=bash
# Sourced by the MPI tests: "mpirun" is the build's MPI (configure's;
# FTRT_MPI and FTRT_MPIRUN from make check).  Open MPI 5's mpirun takes the
# scripts' words as 4.1's does: "mpirun" is it.  For MPICH, the scripts'
# "mpirun -np N [-x NAME] [--oversubscribe] PROG [: -np M PROG]" goes to its
# hydra, which passes the whole environment and places any number of ranks
# on this host: -x NAME and --oversubscribe before the program are dropped
# (a test's -x passes a variable of its environment, which hydra passes).  The wrapper is in a
# directory every user can read (tests that run as nobody use it too).
if [ "${FTRT_MPI:-ompi4}" = ompi5 ]; then
  MPIRUN_DIR=$(mktemp -d /tmp/ftrt-mpirun.XXXXXX)
  chmod 755 "$MPIRUN_DIR"
  # The tests' Open MPI 4 settings in PRRTE's words: oversubscription, the
  # shared-memory BTL's name.
  cat >"$MPIRUN_DIR/mpirun" <<EOS
#!/bin/sh
[ -z "\${OMPI_MCA_rmaps_base_oversubscribe:-}" ] ||
  export PRTE_MCA_rmaps_default_mapping_policy=\${PRTE_MCA_rmaps_default_mapping_policy:-:oversubscribe}
[ -z "\${OMPI_MCA_btl:-}" ] || export OMPI_MCA_btl=\$(echo "\$OMPI_MCA_btl" | sed 's/vader/sm/')
exec "${FTRT_MPIRUN:?}" "\$@"
EOS
  chmod 755 "$MPIRUN_DIR/mpirun"
  export PATH=$MPIRUN_DIR:$PATH
fi
if [ "${FTRT_MPI:-ompi4}" = mpich ]; then
  MPIRUN_DIR=$(mktemp -d /tmp/ftrt-mpirun.XXXXXX)
  chmod 755 "$MPIRUN_DIR"
  cat >"$MPIRUN_DIR/mpirun" <<EOS
#!/usr/bin/env bash
# Only the launcher's options are read: from the program's name to the next
# ":" (MPMD) every word is the program's.
a=() prog=0
while [ \$# -gt 0 ]; do
  if [ \$prog -eq 1 ]; then
    [ "\$1" = : ] && prog=0
    a+=("\$1")
  else
    case \$1 in
      --oversubscribe) ;;
      -x) shift ;;
      -np|-n) a+=("\$1" "\$2"); shift ;;
      *) a+=("\$1"); prog=1 ;;
    esac
  fi
  shift
done
exec "${FTRT_MPIRUN:-mpiexec}" "\${a[@]}"
EOS
  chmod 755 "$MPIRUN_DIR/mpirun"
  export PATH=$MPIRUN_DIR:$PATH
fi
