# ITK module description (ITK's module conventions).  Built by Modules/CMakeLists.txt
# against the found ITK; the filter wraps the C core's tk_fibers_find.
set(DOCUMENTATION "Fiber directions (local maxima on the sphere) of spherical-harmonic
images, through their equivalent symmetric tensors, on the CPU (ITK's threader) or CUDA.")
itk_module(TensorKernelsFiberDirections
  DEPENDS ITKCommon ITKImageGrid
  TEST_DEPENDS ITKIOImageBase ITKIONIFTI ITKIONRRD ITKIOMeta
  DESCRIPTION "${DOCUMENTATION}")
