# ITK module description (ITK's module conventions).  Built by Modules/CMakeLists.txt
# against the found ITK; the filter wraps the C core's tk_eig_solve.
set(DOCUMENTATION "Eigenvalues of a small real nonsymmetric matrix per pixel (Jacobians,
structure tensors, Hessians, local transition matrices), batched on the CPU (ITK's
threader) or CUDA, as LAPACK's dgeev computes them.")
itk_module(TensorKernelsBatchedEigenvalues
  DEPENDS ITKCommon
  DESCRIPTION "${DOCUMENTATION}")
