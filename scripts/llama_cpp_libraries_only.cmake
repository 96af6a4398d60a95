# Included at the end of llama.cpp's project() when llama-cpp-python builds it
# (CMAKE_ARGS=-DCMAKE_PROJECT_llama.cpp_INCLUDE=this file; scripts/local_llm.sh).
# llama-cpp-python forces llama.cpp's `common` library on, with its HTTP client, yet loads
# only libllama and libggml; this variable, set in llama.cpp's own scope, leaves them out
# and roughly halves the build.
set(LLAMA_BUILD_COMMON OFF)
