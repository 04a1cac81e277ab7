# CONVOY_PRINT_SUMMARY
# --------------------
# What configure found, printed after AC_OUTPUT.
AC_DEFUN([CONVOY_PRINT_SUMMARY], [
AS_IF([test "x$convoy_have_cuda" = x1],
    [convoy_sum_cuda="yes, CUDA runtime $convoy_cuda_version, batch copies: $convoy_have_cuda_batch ($NVCC $NVCCFLAGS)"],
    [convoy_sum_cuda="no${convoy_cuda_why:+ ($convoy_cuda_why)}"])
AS_IF([test "x$convoy_have_hip" = x1],
    [convoy_sum_hip="yes, HIP $convoy_hip_version, batch copies: $convoy_have_hip_batch"],
    [convoy_sum_hip="no${convoy_hip_why:+ ($convoy_hip_why)}"])
AS_IF([test "x$convoy_modules" = xyes],
    [convoy_sum_modules="yes, in $libdir/convoy"],
    [convoy_sum_modules="no, built into libconvoy${convoy_modules_why:+ ($convoy_modules_why)}"])
AS_IF([test "x$convoy_have_mpi" = x1],
    [convoy_sum_mpi="yes ($MPI_LIBS${MPIEXEC:+, $MPIEXEC})"],
    [convoy_sum_mpi="no${convoy_mpi_why:+ ($convoy_mpi_why)}"])
AS_IF([test "x$convoy_have_check" = xyes],
    [convoy_sum_check=yes],
    [convoy_sum_check="no (the Check suites will not be built)"])
AS_IF([test "x$convoy_have_jansson" = xyes],
    [convoy_sum_jansson=yes],
    [convoy_sum_jansson="no (convoy-trace will not be built)"])
cat <<CONVOY_EOF

convoy $PACKAGE_VERSION configured:
  prefix        $prefix
  compiler      $CC $CONVOY_CFLAGS $CFLAGS
  sanitizers    ${convoy_sanitizers:-none}
  LTO           $convoy_lto${convoy_lto_why:+ ($convoy_lto_why)}
  hwloc         $convoy_hwloc_version
  Check         $convoy_sum_check
  jansson       $convoy_sum_jansson
  CUDA          $convoy_sum_cuda
  HIP           $convoy_sum_hip
  GPU modules   $convoy_sum_modules
  MPI           $convoy_sum_mpi

CONVOY_EOF
])
