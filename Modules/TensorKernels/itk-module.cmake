# The TensorKernels ITK module: ITK's module declaration, evaluated by itk_module_impl()
# (ITK's, or cmake/TensorKernelsITKModule.cmake inside this project).
set(DOCUMENTATION "GPU tensor kernels for medical imaging as ITK filters over the
TensorKernels C core, each on the CPU (ITK's threader or OpenMP) or CUDA: batched
eigenvalues of small matrices per pixel (BatchedEigenvalues), fiber directions of
spherical-harmonic images (FiberDirections), their fixels as MRtrix3's fod2fixel segments
them (Fixels), non-negative low-rank factorization of 3-D and
4-D images (NonnegativeTensorFactorization), their tensor completion (TuckerCompletion), and
streamline tractography from spherical-harmonic images (StreamlineTractography).")
itk_module(TensorKernelsFilters
  DEPENDS ITKCommon
  TEST_DEPENDS ITKCommon
  DESCRIPTION "${DOCUMENTATION}")
