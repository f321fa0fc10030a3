# ITK module description (ITK's module conventions).  Built by Modules/CMakeLists.txt
# against the found ITK; the filter wraps the C core's sparse FastTucker (tk_tucker.h).
set(DOCUMENTATION "Tensor completion of 3-D and 4-D images: a low-rank sparse FastTucker
model fitted by SGD to the voxels a mask marks as observed, evaluated on the whole grid
(fills dropped slices or volumes), on the CPU (OpenMP) or CUDA.")
itk_module(TensorKernelsTuckerCompletion
  DEPENDS ITKCommon
  TEST_DEPENDS ITKCommon
  DESCRIPTION "${DOCUMENTATION}")
