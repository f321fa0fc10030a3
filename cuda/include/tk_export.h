/** What the library exports: the declarations of the public headers, and nothing else.
 * tk_core is compiled with hidden visibility (cuda/CMakeLists.txt); every public header
 * wraps its declarations in TK_API_BEGIN / TK_API_END, which also give them C linkage, so
 * a shared build of the library exports its API and keeps its internal functions to itself. \file
 * \ingroup tk_group_common */
#ifndef TK_EXPORT_H
#define TK_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define TK_VISIBILITY_DEFAULT_PUSH _Pragma("GCC visibility push(default)")
#define TK_VISIBILITY_POP _Pragma("GCC visibility pop")
#else
#define TK_VISIBILITY_DEFAULT_PUSH
#define TK_VISIBILITY_POP
#endif

#ifdef __cplusplus
#define TK_API_BEGIN extern "C" { TK_VISIBILITY_DEFAULT_PUSH
#define TK_API_END TK_VISIBILITY_POP }
#else
#define TK_API_BEGIN TK_VISIBILITY_DEFAULT_PUSH
#define TK_API_END TK_VISIBILITY_POP
#endif

#endif
