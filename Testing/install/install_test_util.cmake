# Shared by the install tests (cmake -P scripts run with BUILD_DIR and WORK_DIR set): a fresh
# install of the build tree, and a host project configured and built against a prefix.

# WORK_DIR emptied, then the build tree installed into WORK_DIR/prefix.
function(install_build_tree_afresh)
  file(REMOVE_RECURSE ${WORK_DIR})
  execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "install failed: ${rc}\n${out}")
  endif()
endfunction()

# The project in source configured into build with CMAKE_PREFIX_PATH=prefix (and any cache
# arguments after what), then built; what names the project in a failure's message.
function(configure_and_build source build prefix what)
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${source} -B ${build} -DCMAKE_PREFIX_PATH=${prefix} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "configuring ${what} failed:\n${out}")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${build} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "building ${what} failed:\n${out}")
  endif()
endfunction()
