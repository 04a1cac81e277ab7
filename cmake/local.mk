# cmake/: the CMake package files, so that find_package(convoy) works beside convoy.pc.
# They are made by make, not configure, so that they carry the expanded paths
# (configure's @libdir@ is "${exec_prefix}/lib", which CMake cannot read).

cmakeconfigdir = $(libdir)/cmake/convoy
cmakeconfig_DATA = cmake/convoyConfig.cmake cmake/convoyConfigVersion.cmake
CLEANFILES += $(cmakeconfig_DATA)
EXTRA_DIST += cmake/convoyConfig.cmake.in cmake/convoyConfigVersion.cmake.in

convoy_cmake_subst = sed \
	-e 's|@PACKAGE_VERSION[@]|$(PACKAGE_VERSION)|g' \
	-e 's|@CONVOY_VERSION_MAJOR[@]|$(CONVOY_VERSION_MAJOR)|g' \
	-e 's|@CONVOY_VERSION_MINOR[@]|$(CONVOY_VERSION_MINOR)|g' \
	-e 's|@includedir[@]|$(includedir)|g' \
	-e 's|@libdir[@]|$(libdir)|g' \
	-e 's|@HWLOC_LIBS[@]|$(HWLOC_LIBS)|g' \
	-e 's|@CUDA_LDFLAGS[@]|$(CUDA_LDFLAGS)|g' \
	-e 's|@CUDA_LIBS[@]|$(CUDA_LIBS)|g' \
	-e 's|@HIP_LDFLAGS[@]|$(HIP_LDFLAGS)|g' \
	-e 's|@HIP_LIBS[@]|$(HIP_LIBS)|g' \
	-e 's|@MPI_LIBS[@]|$(MPI_LIBS)|g' \
	-e 's|@CONVOY_SYS_LIBS[@]|$(CONVOY_SYS_LIBS)|g' \
	-e 's|@CONVOY_HAVE_CUDA[@]|$(CONVOY_BUILD_CUDA)|g' \
	-e 's|@CONVOY_HAVE_HIP[@]|$(CONVOY_BUILD_HIP)|g'

cmake/convoyConfig.cmake: $(srcdir)/cmake/convoyConfig.cmake.in Makefile
	$(AM_V_GEN)$(MKDIR_P) cmake && $(convoy_cmake_subst) $(srcdir)/cmake/convoyConfig.cmake.in >$@
cmake/convoyConfigVersion.cmake: $(srcdir)/cmake/convoyConfigVersion.cmake.in Makefile
	$(AM_V_GEN)$(MKDIR_P) cmake && $(convoy_cmake_subst) $(srcdir)/cmake/convoyConfigVersion.cmake.in >$@
