/** itkTensorKernelsClassMacro: the ITK class preamble of the TensorKernels classes, written
 * once. \file
 * \ingroup tk_group_tk_itk */
#ifndef itkTensorKernelsMacro_h
#define itkTensorKernelsMacro_h

#include "itkMacro.h"
#include "itkSmartPointer.h"

/** ITK's class preamble, at the top of the public section of every TensorKernels class:
 * no copy or move; the aliases Self, Superclass (the type after the class's name, whose
 * template arguments may hold commas), Pointer and ConstPointer; and GetNameOfClass()
 * (itkTypeMacro).  A class that can be made adds itkNewMacro(Self) after it.
 * \ingroup tk_group_tk_itk */
#define itkTensorKernelsClassMacro(thisClass, ...)                                                                      \
    ITK_DISALLOW_COPY_AND_MOVE(thisClass);                                                                              \
    using Self = thisClass;                                                                                             \
    using Superclass = __VA_ARGS__;                                                                                     \
    using Pointer = SmartPointer<Self>;                                                                                 \
    using ConstPointer = SmartPointer<const Self>;                                                                      \
    itkTypeMacro(thisClass, Superclass)

#endif
