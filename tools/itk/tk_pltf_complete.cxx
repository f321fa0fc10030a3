// tk-pltf complete: itk::NonnegativeTensorFactorizationImageFilter on an image file (the
// mode 3D Slicer runs).  A 3-D scalar volume stays 3-D; a 4-D image (4-D NIfTI, NRRD,
// MHA) keeps its whole 4-D geometry; a vector volume (NRRD, e.g. a DWI series or dynamic
// PET frames as components) becomes 4-D with the components on the 4th axis and is
// written back as a vector volume.
#include "tk_pltf_complete.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "cli.h"
#include "cli_failure.h"
#include "complete_args.h"
#include "complete_run.h"
#include "itkNonnegativeTensorFactorizationImageFilter.h"
#include "itk_progress_bar.h"
#include "tk_pltf.h"

namespace {

const char *prog = "tk-pltf";

struct CompleteArgs : tk::CompleteShared {
    std::string model, dims;  // tk_pltf_complete_values_init: the defaults
    long rank = 0, iters = 0;
    tk_pltf_divergence divergence = TK_PLTF_KL;
};

bool is_preset(const std::string &model) { return model == "parafac" || model == "cp" || model == "tucker"; }

int parse(int argc, char **argv, CompleteArgs &a)
{
    tk_pltf_complete_values v;
    tk_pltf_complete_values_init(&v);
    if (!tk::parse_complete(&tk_pltf_complete_command, argc, argv, &v, v.common, a)) return 0;
    a.model = v.model;
    a.dims = v.dims ? v.dims : "";
    a.rank = v.rank, a.iters = v.iters;
    a.divergence = static_cast<tk_pltf_divergence>(v.divergence);
    // A malformed expression is a usage error before any file is touched.
    tk_pltf_model m;
    if (!is_preset(a.model) && tk_pltf_parse(a.model.c_str(), &m) != TK_OK) {
        tk_cli_error(prog, "--model: %s; see tk-pltf complete --help for how a model is written", tk_last_error());
        return 0;
    }
    return 1;
}

// What the filter fits: the expression and the sizes of its latent indices.
struct Fit {
    std::string model, latent;
};

// The preset for a D-dimensional image or the user's expression; every latent index is
// --rank long unless --dims sizes it.
Fit fit_for(const CompleteArgs &a, unsigned dims)
{
    std::string text = a.model;
    if (a.model == "parafac" || a.model == "cp") text = dims == 3 ? "ijk=ia,ja,ka" : "ijkl=ia,ja,ka,la";
    if (a.model == "tucker") text = dims == 3 ? "ijk=ip,jq,kr,pqr" : "ijkl=ip,jq,kr,ls,pqrs";
    tk_pltf_model m;
    if (tk_pltf_parse(text.c_str(), &m) != TK_OK)
        throw tk::UsageError(std::string("--model: ") + tk_last_error() +
                             "; see tk-pltf complete --help for how a model is written");
    if (m.out_ndim != static_cast<int>(dims))
        throw std::runtime_error(a.input + ": a " + std::to_string(dims) + "-D image, but model \"" + m.text +
                                 "\" observes " + std::to_string(m.out_ndim) +
                                 " indices (those before '='); name the image's axes in C order, " +
                                 (dims == 3 ? "z, y, x (e.g. \"zyx=za,ya,xa\")"
                                            : "t, z, y, x (e.g. \"tzyx=tp,zyxp\")"));
    bool observed[TK_PLTF_MAX_INDICES] = {false}, used[TK_PLTF_MAX_INDICES] = {false};
    for (int o = 0; o < m.out_ndim; ++o) observed[m.out[o]] = true;
    for (int f = 0; f < m.num_factors; ++f)
        for (int d = 0; d < m.factor_ndim[f]; ++d) used[m.factor[f][d]] = true;
    if (!a.dims.empty() && tk_pltf_set_dims(&m, a.dims.c_str()) != TK_OK)
        throw tk::UsageError(std::string("--dims: ") + tk_last_error() + "; give the sizes as --dims a=10,b=5");
    Fit fit{m.text, ""};
    for (int id = 0; id < TK_PLTF_MAX_INDICES; ++id) {
        if (observed[id] && m.dims[id])
            throw tk::UsageError(std::string("--dims sets '") + tk_pltf_index_letter(id) + "', an observed index of \"" +
                                 m.text + "\" (its size is the image's); drop it from --dims");
        if (observed[id] || !used[id]) continue;
        const size_t size = m.dims[id] ? m.dims[id] : static_cast<size_t>(a.rank);
        fit.latent += (fit.latent.empty() ? "" : ",") + std::string(1, tk_pltf_index_letter(id)) + "=" +
                      std::to_string(size);
    }
    return fit;
}

// --backend: auto through the tools' shared rule (tk_cli_resolve_backend: CUDA where a
// usable GPU runs this build's code, else omp with one warning line); false after an
// explicit cuda that cannot run (the message is printed).
bool resolve_backend(const CompleteArgs &a, tk_backend *run)
{
    tk_backend chosen = TK_BACKEND_OMP;
    if (!tk_cli_resolve_backend(prog, a.backend, a.device, TK_BACKEND_OMP, a.quiet, &chosen)) return false;
    *run = chosen == TK_BACKEND_CUDA ? TK_BACKEND_CUDA : chosen == TK_BACKEND_CPU ? TK_BACKEND_CPU : TK_BACKEND_OMP;
    return true;
}

// A rough upper estimate of the fit's host memory, in bytes: image-sized buffers (the
// image and the output here, the filter's copies, the updates' ratios), the factors with
// their numerators, denominators and update terms, and the largest intermediate of the
// reconstruction's contraction order (peak RSS measured at 0.6-0.9 of it for PARAFAC
// and Tucker models).  Run before the fit so that a model too large for
// this machine is an error, not a process the kernel kills half-way.
double fit_bytes(const Fit &fit, unsigned dims, const size_t *c_shape)
{
    tk_pltf_model m;
    if (tk_pltf_parse(fit.model.c_str(), &m) != TK_OK ||
        tk_pltf_set_out_shape(&m, static_cast<int>(dims), c_shape) != TK_OK ||
        (!fit.latent.empty() && tk_pltf_set_dims(&m, fit.latent.c_str()) != TK_OK) || tk_pltf_check_dims(&m) != TK_OK)
        throw std::runtime_error(std::string("model \"") + fit.model + "\": " + tk_last_error());
    double factors = 0, largest = 0;
    for (int f = 0; f < m.num_factors; ++f) factors += static_cast<double>(tk_pltf_factor_count(&m, f));
    std::string plan(8192, '\0');
    tk_pltf_plan_describe(&m, &plan[0], plan.size());  // "(ia,ja)->aij; (aij,ka)->ijk"
    for (size_t at = plan.find("->"); at != std::string::npos; at = plan.find("->", at + 2)) {
        double size = 1;
        for (size_t c = at + 2; c < plan.size() && tk_pltf_index_id(plan[c]) >= 0; ++c)
            size *= static_cast<double>(m.dims[tk_pltf_index_id(plan[c])]);
        largest = std::max(largest, size);
    }
    const double libraries = 256.0 * (1 << 20);  // what ITK, BLAS and CUDA hold before any data (measured)
    return libraries + 8.0 * (10.0 * static_cast<double>(tk_pltf_out_count(&m)) + 8.0 * factors + 4.0 * largest);
}

// What this machine can give now (MemAvailable; all of its memory where that is unknown).
double available_bytes()
{
    if (FILE *f = std::fopen("/proc/meminfo", "r")) {
        char line[256];
        unsigned long long kib = 0;
        while (std::fgets(line, sizeof line, f))
            if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
        std::fclose(f);
        if (kib) return 1024.0 * static_cast<double>(kib);
    }
    return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

const char *backend_name(tk_backend b) { return b == TK_BACKEND_CPU ? "cpu" : b == TK_BACKEND_OMP ? "omp" : "cuda"; }

// The observed voxels the divergence can take (finite; >= 0 for KL, > 0 for IS), or an
// error naming the first other one as (x, y, z[, t]); returns how many are observed.
template <typename TImage>
size_t check_observed(const CompleteArgs &a, const TImage *image,
                      const itk::Image<unsigned char, TImage::ImageDimension> *mask)
{
    constexpr unsigned D = TImage::ImageDimension;
    const auto size = image->GetLargestPossibleRegion().GetSize();
    const size_t count = image->GetLargestPossibleRegion().GetNumberOfPixels();
    const float *x = image->GetBufferPointer();
    const unsigned char *m = mask ? mask->GetBufferPointer() : nullptr;
    size_t observed = 0;
    for (size_t v = 0; v < count; ++v) {
        if (m && !m[v]) continue;  // never read, may hold anything
        ++observed;
        const double value = x[v];
        const tk_pltf_divergence dv = a.divergence;
        const char *bad = !std::isfinite(value)             ? "is not finite"
                          : dv == TK_PLTF_KL && value < 0    ? "is negative: the KL divergence needs values >= 0"
                          : dv == TK_PLTF_IS && !(value > 0) ? "is not positive: Itakura-Saito needs values > 0"
                                                             : nullptr;
        if (!bad) continue;
        std::string where = "(";
        size_t rest = v;
        for (unsigned d = 0; d < D; ++d) {  // x fastest
            where += std::to_string(rest % size[d]) + (d + 1 < D ? ", " : ")");
            rest /= size[d];
        }
        char text[64];
        std::snprintf(text, sizeof text, "%g", value);
        throw std::runtime_error(a.input + ": voxel " + where + " = " + text + " " + bad +
                                 (dv != TK_PLTF_EUCLIDEAN && std::isfinite(value)
                                      ? "; use --divergence euclidean, or mask it out (--mask)"
                                      : "; fix it, or mask it out (--mask)"));
    }
    if (!observed)
        throw std::runtime_error(a.mask + ": no voxel is observed (the mask is zero everywhere); mark the observed voxels "
                                          "with 1");
    return observed;
}

template <typename TImage>
typename TImage::Pointer complete(const CompleteArgs &a, const Fit &fit, tk_backend backend, const TImage *image,
                                  const itk::Image<unsigned char, TImage::ImageDimension> *mask)
{
    const size_t observed = check_observed(a, image, mask);
    constexpr unsigned D = TImage::ImageDimension;
    size_t c_shape[D];  // C order: the image's last axis first
    for (unsigned d = 0; d < D; ++d) c_shape[d] = image->GetLargestPossibleRegion().GetSize()[D - 1 - d];
    const double need = fit_bytes(fit, D, c_shape), have = available_bytes();
    if (need > have) {
        char text[160];
        std::snprintf(text, sizeof text, "about %.1f GiB of memory, %.1f GiB available", need / (1 << 30),
                      have / (1 << 30));
        throw std::runtime_error(a.input + ": model " + fit.model + " (" + fit.latent + ") needs " + text +
                                 "; lower --rank or --dims");
    }
    using Filter = itk::NonnegativeTensorFactorizationImageFilter<TImage>;
    auto filter = Filter::New();
    filter->SetInput(image);
    if (mask) filter->SetMaskImage(mask);
    filter->SetModel(fit.model);
    filter->SetLatentSizes(fit.latent);
    filter->SetDivergence(static_cast<typename Filter::DivergenceType>(a.divergence));
    filter->SetNumberOfIterations(static_cast<unsigned>(a.iters));
    filter->SetSeed(a.seed);
    filter->SetBackend(static_cast<typename Filter::BackendType>(backend));
    tk::update_with_progress(filter, prog, a.quiet);
    const auto &history = filter->GetDivergenceHistory();
    if (!a.quiet && !history.empty())
        std::fprintf(stderr, "%s: model %s (%s), %ld iterations on %s; %zu of %zu voxels observed; "
                             "%s divergence %.6g -> %.6g\n",
                     prog, filter->GetFittedModel().c_str(), fit.latent.c_str(), a.iters, backend_name(backend),
                     observed, static_cast<size_t>(image->GetLargestPossibleRegion().GetNumberOfPixels()),
                     tk_pltf_divergence_name(a.divergence), history.front(), history.back());
    typename TImage::Pointer out = filter->GetOutput();
    out->DisconnectPipeline();
    if (a.keep_observed) {
        const size_t count = image->GetLargestPossibleRegion().GetNumberOfPixels();
        for (size_t v = 0; v < count; ++v)
            if (!mask || mask->GetBufferPointer()[v]) out->GetBufferPointer()[v] = image->GetBufferPointer()[v];
    }
    return out;
}

}  // namespace

extern "C" int tk_pltf_complete_requested(int argc, char **argv)
{
    if (argc >= 2 && !std::strcmp(argv[1], "complete")) return 1;
    int word = 0;
    for (int i = 1; i < argc; ++i) {
        if (tk_cli_is(argv[i], "--input")) return 0;
        word = word || !std::strcmp(argv[i], "complete");
    }
    return word;
}

extern "C" int tk_pltf_complete_main(int argc, char **argv)
{
    CompleteArgs a;
    if (!parse(argc, argv, a)) return TK_EXIT_USAGE;
    Fit fit;
    tk_backend backend = TK_BACKEND_OMP;
    // The model for the image's number of axes, and --backend, before the image is read.
    auto ready = [&](tk::CompletionInput kind) {
        fit = fit_for(a, kind == tk::CompletionInput::Scalar3 ? 3 : 4);
        return resolve_backend(a, &backend);
    };
    return tk::run_completion(prog, a, "out of memory for the image and the model's factors; try a smaller --rank",
                              ready, [&](auto *image, auto *mask) { return complete(a, fit, backend, image, mask); });
}
