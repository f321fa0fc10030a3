# ITK module description (ITK's module conventions).  Built by Modules/CMakeLists.txt
# against the found ITK; the filter wraps the C core's tk_pltf_factorize.
set(DOCUMENTATION "Non-negative low-rank factorization (PARAFAC, Tucker or any PLTF model)
of 3-D and 4-D images with KL, Euclidean or Itakura-Saito multiplicative updates and an
optional mask, for masked completion and denoising, on the CPU or CUDA.")
itk_module(TensorKernelsNonnegativeTensorFactorization
  DEPENDS ITKCommon
  DESCRIPTION "${DOCUMENTATION}")
