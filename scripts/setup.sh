#!/usr/bin/env bash
# Shared set-up of demo.sh and test.sh: install what is missing (Debian), configure
# and build in build/, each step a line of account with its whole output in build/logs/
# (tk_logged).  Sourced, not run.
set -euo pipefail

TK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TK_BUILD="${TK_BUILD:-$TK_ROOT/build}"

# Debian packages the build and the tests need.  The ITK and VTK parts add theirs
# to TK_OPTIONAL_PACKAGES as they land; the C core needs none of them.
# libfftw3-dev and uuid-dev are only recommended by libinsighttoolkit5-dev, but its exported
# CMake targets link FFTW, so a --no-install-recommends install needs them named.  The Python
# packages run the phantom generator and its validation (Testing/validation).  VTK: tk-fibers
# --vtp/--png; its render windows are X ones, so libx11-dev, and Xvfb (xvfb, xauth: xvfb-run)
# to render without a display.
TK_PACKAGES=(build-essential cmake libgtest-dev python3 libinsighttoolkit5-dev libfftw3-dev uuid-dev mrtrix3 liblapacke-dev libopenblas-dev
             python3-numpy python3-scipy python3-nibabel python3-dipy libvtk9-dev libx11-dev xvfb xauth)
TK_OPTIONAL_PACKAGES=()
# xmllint checks the tools' Slicer descriptions; doxygen builds the API reference (target doc);
# matplotlib draws the benchmark plots.
TK_PACKAGES+=(libxml2-utils doxygen python3-matplotlib)
# clang with libFuzzer (libclang-rt-14-dev holds libclang_rt.fuzzer): the fuzz targets (TK_FUZZ).
TK_PACKAGES+=(clang libclang-rt-14-dev)
# The Slicer round-trip test: VTK's Python (reads the .vtp), venv and pip for ctk_cli (tk_python_env).
TK_PACKAGES+=(python3-vtk9 python3-venv python3-pip)
# zlib: .mif.gz and .nii.gz in the tools' own image-format code (tools/io/mif_io.c, nifti_header.c).
TK_PACKAGES+=(zlib1g-dev)
# libbz2: NRRD files of encoding bzip2 (tools/io/image_nrrd.c; ITK 5.2's NrrdIO does not read them).
TK_PACKAGES+=(libbz2-dev)
# The Python package (python/): its extension builds against Python's headers; its tests run pytest.
TK_PACKAGES+=(python3-dev python3-pytest)
# Its Dask wrappers (tensorkernels.dask) and cohort runner (tensorkernels.cohort, a LocalCluster in
# its tests): Debian's Dask and dask.distributed.
TK_PACKAGES+=(python3-dask python3-distributed)

tk_missing_packages() {
    local pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
    done
}

tk_install_packages() {
    command -v dpkg-query >/dev/null 2>&1 || { echo "setup: not a Debian system; install the packages by hand: ${TK_PACKAGES[*]}" >&2; return 0; }
    local all missing
    all=("${TK_PACKAGES[@]}" "${TK_OPTIONAL_PACKAGES[@]+"${TK_OPTIONAL_PACKAGES[@]}"}")
    mapfile -t missing < <(tk_missing_packages "${all[@]}")
    if [ ${#missing[@]} = 0 ]; then echo "packages: all ${#all[@]} present"; return 0; fi
    tk_logged "installing $(tk_count ${#missing[@]} package) (${missing[*]})" apt tk_apt_install "${missing[@]}"
}

# apt-get update, then the packages named; a step of tk_install_packages.
tk_apt_install() {
    local sudo=""
    if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update && $sudo apt-get install -y --no-install-recommends "$@"
}

# ctk_cli (PyPI ctk-cli), CommonTK's parser of Slicer module descriptions, for the Slicer
# round-trip test, and trx-python, the TRX format's own reader, for the .trx writer's test: in a
# virtual environment in the build tree (Debian's Python is externally
# managed) that also sees Debian's numpy, nibabel and VTK (--system-site-packages).
tk_python_env() {
    local env="$TK_BUILD/python"
    if [ -x "$env/bin/python3" ] && "$env/bin/python3" -c "import ctk_cli, trx" 2>/dev/null; then
        echo "python env: $(tk_rel "$env") (ctk-cli and trx-python present)"
        return 0
    fi
    tk_logged "python env: ctk-cli and trx-python into $(tk_rel "$env")" python tk_python_env_make "$env"
}

tk_python_env_make() {
    if [ ! -x "$1/bin/python3" ]; then /usr/bin/python3 -m venv --system-site-packages "$1" || return; fi
    "$1/bin/python3" -c "import ctk_cli" 2>/dev/null || "$1/bin/python3" -m pip install "ctk-cli==1.5" || return
    # without it the .trx test says SKIPPED; the rest of the suite does not need it
    "$1/bin/python3" -c "import trx" 2>/dev/null || "$1/bin/python3" -m pip install "trx-python==0.6" ||
        echo "trx-python could not be installed: the .trx reader test will be skipped"
}

# The Python package's pinned build requirements (python/pyproject.toml: scikit-build-core,
# nanobind, and theirs) as wheels in TK_BUILD/python-wheels, so that its CTest (tk_python_package)
# builds it offline.  Without PyPI that test says SKIPPED; nothing else needs them.
tk_python_wheels() {
    local dir="$TK_BUILD/python-wheels" reqs r missing=0
    mapfile -t reqs < <(grep -o '"[A-Za-z0-9_.-]*==[0-9.]*"' "$TK_ROOT/python/pyproject.toml" | tr -d '"')
    for r in "${reqs[@]}"; do
        compgen -G "$dir/$(echo "${r%%==*}" | tr - _)-${r##*==}-*.whl" >/dev/null || missing=1
    done
    if [ "$missing" = 0 ]; then echo "python wheels: ${reqs[*]} present in $(tk_rel "$dir")"; return 0; fi
    tk_logged "python wheels: ${reqs[*]} into $(tk_rel "$dir")" python-wheels \
        /usr/bin/python3 -m pip download --only-binary=:all: --dest "$dir" "${reqs[@]}" ||
        echo "the Python package's build requirements could not be downloaded: its test will be skipped"
}

# Configure (options: the arguments, after -DCMAKE_BUILD_TYPE=Release) and build TK_BUILD,
# each a line of account; the output goes to TK_BUILD/logs/configure.log and build.log.
tk_configure_and_build() {
    local jobs
    jobs=$(nproc 2>/dev/null || echo 2)
    tk_logged "configuring $(tk_rel "$TK_BUILD")/${*:+ ($*)}" configure \
        cmake -S "$TK_ROOT" -B "$TK_BUILD" -DCMAKE_BUILD_TYPE=Release "$@"
    tk_logged "building" build cmake --build "$TK_BUILD" -j "$jobs"
}

# ctest in TK_BUILD with the arguments given; its output goes to TK_BUILD/logs/ctest.log and
# its summary (counts, tests that did not run or failed) to stdout.  Returns ctest's status.
tk_ctest() {
    tk_logged "running the tests in $(tk_rel "$TK_BUILD")/" ctest tk_in_build ctest "$@"
}

tk_in_build() { (cd "$TK_BUILD" && "$@"); }

# --- Accounts of the steps ------------------------------------------------------------------
# tk_logged TITLE NAME COMMAND...: runs COMMAND with its output (stdout and stderr) in
# TK_BUILD/logs/NAME.log, and prints one line: "TITLE ... done in 12s (log: build/logs/NAME.log)",
# with what the log says (targets built, warnings) where there is something to say.  On a
# terminal the line shows the progress while the command runs.  When COMMAND fails, the end of
# the log follows the line (ctest: the end of its output, summary included), then the log's
# path; the return status is COMMAND's.  A COMMAND that is a shell function runs with set -e
# off (it is tested), so it must chain its steps with &&.
TK_CWD="$PWD"
tk_rel() { case $1 in "$TK_CWD"/*) printf '%s' "${1#"$TK_CWD"/}" ;; *) printf '%s' "$1" ;; esac; }

tk_tty() { [ -t 1 ] && [ "${TERM:-dumb}" != dumb ]; }

tk_duration() {
    local s=$1
    if [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi
}

tk_count() { if [ "$1" = 1 ]; then echo "1 $2"; else echo "$1 ${2}s"; fi; }

tk_logged() {
    local title=$1 name=$2; shift 2
    mkdir -p "$TK_BUILD/logs"
    local log="$TK_BUILD/logs/$name.log" start=$SECONDS rc=0
    if tk_tty; then
        printf '%s ...' "$title"
        # Make's percentages are those of the target being built (they go back and forth), so
        # the targets and files done so far instead, and the file last started; Ninja's
        # "[42/310]"; CTest's " 42/310 Test".
        "$@" 2>&1 | tee "$log" | awk -v t="$title" '
            / Built target / { nt++; p = nt " targets, " nf + 0 " files compiled" cur }
            /Building [A-Z+]+ object / { nf++; cur = $NF; sub(/.*\//, "", cur); sub(/\.o(bj)?$/, "", cur); cur = " (" cur ")"; p = nt + 0 " targets, " nf " files compiled" cur }
            match($0, /^\[[0-9]+\/[0-9]+\]/) { p = substr($0, RSTART + 1, RLENGTH - 2) }
            match($0, /^ *[0-9]+\/[0-9]+ +Test +#/) { p = $1 }
            p != "" && p != last { printf "\r\033[K%s ... %s", t, p; fflush(); last = p }' || rc=$?
        printf '\r\033[K%s ... ' "$title"
    else
        printf '%s ... ' "$title"
        "$@" >"$log" 2>&1 || rc=$?
    fi
    local took what=""
    took=$(tk_duration $((SECONDS - start)))
    case $name in
        configure)
            local w
            w=$(grep -c '^CMake Warning' "$log" || true)
            if [ "$w" -gt 0 ]; then what=", $(tk_count "$w" "CMake warning")"; fi ;;
        build)
            # Make prints "Built target NAME" for every target it brings up to date; Ninja
            # "[K/N] ..." for each of its N steps.
            local targets files
            targets=$(grep -o 'Built target .*' "$log" | sort -u | wc -l || true)
            files=$(grep -c 'Building [A-Z]* object' "$log" || true)
            if [ "$targets" -gt 0 ]; then
                what=": $(tk_count "$targets" target)$([ "$rc" = 0 ] || echo " built"), $(tk_count "$files" file) compiled"
            elif grep -q '^\[[0-9]*/[0-9]*\]' "$log"; then
                what=": $(tk_count "$(grep -o '^\[[0-9]*/[0-9]*\]' "$log" | tail -n 1 | sed 's/.*\/\(.*\)\]/\1/')" step)"
                what+=", $(tk_count "$files" file) compiled"
            fi ;;
        ctest)
            local counts
            counts=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1 || true)
            if [ -n "$counts" ]; then what=": $counts"; fi ;;
    esac
    if [ "$rc" = 0 ]; then
        if [ "$name" = ctest ]; then what=""; fi   # the summary follows
        echo "done in $took$what (log: $(tk_rel "$log"))"
        if [ "$name" = ctest ]; then tk_ctest_summary "$log"; fi
        return 0
    fi
    echo "FAILED after $took$what (exit status $rc)"
    if [ "$name" = ctest ]; then
        # The end of the output, from the summary on at the least: the failed tests' names.
        local total from
        total=$(wc -l <"$log")
        from=$(grep -n -E '^[0-9]+% tests passed' "$log" | tail -n 1 | cut -d: -f1 || true)
        if [ -z "$from" ] || [ "$from" -gt $((total - 59)) ]; then from=$((total - 59)); fi
        [ "$from" -ge 1 ] || from=1
        echo "---- $(tk_rel "$log"), from line $from of $total ----"
        tail -n +"$from" "$log"
        echo "---- the whole output of the tests: $(tk_rel "$log")"
    else
        tk_log_tail "$log" >&2
    fi
    return "$rc"
}

# The last 60 lines of a log, and its first error when that comes before them.
tk_log_tail() {
    local log=$1 total first
    total=$(wc -l <"$log")
    first=$(grep -n -m 1 -E 'error:|Error [0-9]+|CMake Error|^E: ' "$log" | cut -d: -f1 || true)
    if [ -n "$first" ] && [ "$first" -le $((total - 60)) ]; then
        echo "---- the first error, line $first of $(tk_rel "$log") ----"
        sed -n "${first},$((first + 14))p" "$log"
    fi
    echo "---- the last 60 lines of $(tk_rel "$log") ($total lines) ----"
    tail -n 60 "$log"
    echo "---- the whole log: $(tk_rel "$log")"
}

# CTest's summary: from "NN% tests passed, ..." to the end, less the time per label, and
# with the list of the tests that did not run (GPU tests without a GPU) cut to a count
# when it is long.
tk_ctest_summary() {
    awk -v lg="$(tk_rel "$1")" '
        /^[0-9]+% tests passed/ { n = 0; on = 1 }
        on { line[++n] = $0 }
        END {
            for (i = 1; i <= n; i++) {
                if (line[i] ~ /^Label Time Summary:/) { while (i < n && line[i + 1] != "") i++; i++; continue }
                if (line[i] ~ /^The following tests did not run:/) {
                    k = 0; split("", why)
                    for (j = i + 1; j <= n && line[j] ~ /^\t/; j++) { k++; r = line[j]; sub(/.*\(/, "", r); sub(/\).*/, "", r); why[r]++ }
                    if (k > 10) {
                        s = ""; for (r in why) s = s (s == "" ? "" : ", ") why[r] " " r
                        print "The following tests did not run: " k " (" s "), named in " lg
                        i = j - 1; continue
                    }
                }
                print line[i]
            }
        }' "$1"
}
