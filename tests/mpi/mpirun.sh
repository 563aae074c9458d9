# shellcheck shell=bash
# Sourced by the MPI tests: "mpirun" is the build's MPI (configure's;
# FTRT_MPI and FTRT_MPIRUN from make check).  For MPICH, the scripts'
# "mpirun -np N [-x NAME] [--oversubscribe] PROG [: -np M PROG]" goes to its
# hydra, which passes the whole environment and places any number of ranks
# on this host: -x and --oversubscribe are dropped.  The wrapper is in a
# directory every user can read (tests that run as nobody use it too).
if [ "${FTRT_MPI:-ompi4}" = mpich ]; then
  MPIRUN_DIR=$(mktemp -d /tmp/ftrt-mpirun.XXXXXX)
  chmod 755 "$MPIRUN_DIR"
  cat >"$MPIRUN_DIR/mpirun" <<EOS
#!/usr/bin/env bash
a=()
while [ \$# -gt 0 ]; do
  case \$1 in
    --oversubscribe) ;;
    -x) shift ;;
    *) a+=("\$1") ;;
  esac
  shift
done
exec "${FTRT_MPIRUN:-mpiexec}" "\${a[@]}"
EOS
  chmod 755 "$MPIRUN_DIR/mpirun"
  export PATH=$MPIRUN_DIR:$PATH
fi
