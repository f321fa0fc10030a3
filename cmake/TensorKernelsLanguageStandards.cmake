# The language standards TensorKernels' sources are written to: C11 for the cores, C++17
# only where ITK, VTK or GoogleTest need it, no compiler extensions.  Included by the main
# project and by the libFuzzer project (Testing/fuzz/libfuzzer), which compiles the same
# sources again and must read them as the main build does.
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
