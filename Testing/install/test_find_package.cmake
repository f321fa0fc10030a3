# Install the build tree to a scratch prefix, move the prefix elsewhere (as a package built
# on one machine is unpacked on another, under another path), then configure, build and run
# host programs that use find_package(TensorKernels) against the moved prefix: the C
# consumer (the core) and, where the build has VTK glyphs, the C++ one (tkPeaksToPolyData.h,
# documented in the user guide).  The installed CMake files must name no path of this build,
# of the sources or of the first prefix, and no library file by absolute path.
# cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... [-DWITH_FIBER_GLYPHS=ON] -P test_find_package.cmake
include(${CMAKE_CURRENT_LIST_DIR}/install_test_util.cmake)
install_build_tree_afresh()

# Paths that mean nothing on another machine.
file(GLOB_RECURSE cmake_files ${WORK_DIR}/prefix/*.cmake)
if(NOT cmake_files)
  message(FATAL_ERROR "the install holds no CMake package files (${WORK_DIR}/prefix)")
endif()
foreach(file IN LISTS cmake_files)
  file(READ ${file} text)
  foreach(path IN ITEMS ${BUILD_DIR} ${SOURCE_DIR} ${WORK_DIR})
    string(FIND "${text}" "${path}" at)
    if(at GREATER -1)
      message(FATAL_ERROR "${file} names ${path}, which does not exist where the package is unpacked")
    endif()
  endforeach()
  # A library by absolute path (/usr/lib/.../libopenblas.so): imported targets and
  # find_dependency find the host's own instead.
  if(text MATCHES "[\"; ](/[^\"; ]*/lib[^/\"; ]*\\.(so|a)(\\.[0-9]+)*)[\"; ]")
    message(FATAL_ERROR "${file} links ${CMAKE_MATCH_1} by absolute path")
  endif()
endforeach()

# The installed tree, moved: the first prefix no longer exists.
file(MAKE_DIRECTORY ${WORK_DIR}/elsewhere)
file(RENAME ${WORK_DIR}/prefix ${WORK_DIR}/elsewhere/tensorkernels)
set(prefix ${WORK_DIR}/elsewhere/tensorkernels)

# Configures and builds consumer/<name> against the moved prefix and runs its program.
function(build_and_run name program)
  configure_and_build(${SOURCE_DIR}/Testing/install/${name} ${WORK_DIR}/${name} ${prefix}
                      "${name} against the moved prefix ${prefix}" -DCMAKE_BUILD_TYPE=Release)
  execute_process(COMMAND ${WORK_DIR}/${name}/${program} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "${program} failed (${rc}):\n${out}")
  endif()
  message(STATUS "${program}: ${out}")
endfunction()

build_and_run(consumer tk_consumer)
if(WITH_FIBER_GLYPHS)
  foreach(header tkPeaksToPolyData.h tkFiberGlyphOutput.h)
    if(NOT EXISTS ${prefix}/include/tensorkernels/${header})
      message(FATAL_ERROR "${header}, which the user guide documents, is not installed")
    endif()
  endforeach()
  build_and_run(glyph_consumer tk_glyph_consumer)
endif()
