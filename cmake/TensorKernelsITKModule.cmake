# ITK's module machinery (itk_module, itk_module_impl, itk_module_test) for building the
# TensorKernels ITK module inside this project.
#
# ITK defines these in ITKModuleMacros.cmake, which only an ITK build tree has: an installed
# ITK (Debian's, for one) ships ITKModuleAPI.cmake alone, and ITKModuleExternal.cmake refuses
# install trees.  So this file gives the subset the module uses, under ITK's names and with
# their meaning, and Modules/TensorKernels/CMakeLists.txt stays the same text whether ITK's
# machinery or this one evaluates it.  ITK's own win wherever they are already defined.
#
# What this build adds to ITK's behaviour: the module is an INTERFACE target (its filters
# are header-only templates) installed into this project's export set (TK_ITK_MODULE_EXPORT),
# its headers under include/tensorkernels, and its tests added when TK_BUILD_TESTING is on.
include_guard(GLOBAL)

set(TK_ITK_MODULE_EXPORT TensorKernelsTargets CACHE STRING
  "export set the in-project ITK module is installed into")
mark_as_advanced(TK_ITK_MODULE_EXPORT)

# itk_module(<name> [DEPENDS ...] [PRIVATE_DEPENDS ...] [COMPILE_DEPENDS ...]
#            [TEST_DEPENDS ...] [DESCRIPTION "..."] [EXCLUDE_FROM_DEFAULT] [ENABLE_SHARED])
# The declaration itk-module.cmake makes: sets itk-module and <name>_DEPENDS,
# <name>_TEST_DEPENDS, <name>_DESCRIPTION in the caller's scope.
if(NOT COMMAND itk_module)
  macro(itk_module _tk_name)
    cmake_parse_arguments(_tk_module "EXCLUDE_FROM_DEFAULT;ENABLE_SHARED" "DESCRIPTION"
      "DEPENDS;PRIVATE_DEPENDS;COMPILE_DEPENDS;TEST_DEPENDS;FACTORY_NAMES" ${ARGN})
    set(itk-module ${_tk_name})
    set(${_tk_name}_DEPENDS ${_tk_module_DEPENDS} ${_tk_module_PRIVATE_DEPENDS} ${_tk_module_COMPILE_DEPENDS})
    set(${_tk_name}_TEST_DEPENDS ${_tk_module_TEST_DEPENDS})
    set(${_tk_name}_DESCRIPTION "${_tk_module_DESCRIPTION}")
  endmacro()
endif()

# itk_module_impl(): evaluates ./itk-module.cmake and makes the module's target <name>
# (INTERFACE: include/ and <name>_LIBRARIES, its ITK DEPENDS loaded through ITK's
# itk_module_config), installs it and its headers, and adds ./test.
if(NOT COMMAND itk_module_impl)
  macro(itk_module_impl)
    include(${CMAKE_CURRENT_SOURCE_DIR}/itk-module.cmake)
    _tk_itk_module_target(${itk-module} "${${itk-module}_DEPENDS}" "${${itk-module}_LIBRARIES}")
    if(TK_BUILD_TESTING AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/test/CMakeLists.txt)
      add_subdirectory(test)
    endif()
  endmacro()
endif()

# itk_module_test(): in the module's test/ folder; sets <name>-Test_LIBRARIES (the module
# and its TEST_DEPENDS) as ITK's does, for the test executables to link.
if(NOT COMMAND itk_module_test)
  macro(itk_module_test)
    include(${CMAKE_CURRENT_SOURCE_DIR}/../itk-module.cmake)
    itk_module_config(_tk_test_deps ${${itk-module}_TEST_DEPENDS})
    set(${itk-module}-Test_LIBRARIES ${itk-module} ${_tk_test_deps_LIBRARIES})
  endmacro()
endif()

function(_tk_itk_module_target name depends libraries)
  itk_module_config(_tk_deps ${depends})
  add_library(${name} INTERFACE)
  target_include_directories(${name} INTERFACE
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/tensorkernels>)
  # ITK's directories and libraries by path only in the build tree: installed, the package
  # config finds the host's ITK and the module links its DEPENDS by ITK's target names.
  foreach(dir IN LISTS _tk_deps_INCLUDE_DIRS)
    target_include_directories(${name} SYSTEM INTERFACE $<BUILD_INTERFACE:${dir}>)
  endforeach()
  foreach(lib IN LISTS _tk_deps_LIBRARIES)
    target_link_libraries(${name} INTERFACE $<BUILD_INTERFACE:${lib}>)
  endforeach()
  foreach(dep IN LISTS depends)
    target_link_libraries(${name} INTERFACE $<INSTALL_INTERFACE:${dep}>)
  endforeach()
  target_link_libraries(${name} INTERFACE ${libraries})
  file(GLOB headers ${CMAKE_CURRENT_SOURCE_DIR}/include/*.h ${CMAKE_CURRENT_SOURCE_DIR}/include/*.hxx)
  install(FILES ${headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tensorkernels)
  install(TARGETS ${name} EXPORT ${TK_ITK_MODULE_EXPORT})
endfunction()
