# cuDNN for tests, benchmarks and examples only (the library never links it).
# Looks in CUDNN_ROOT, the CUDA toolkit, and Ubuntu's multiarch folders; defines CuDNN::cudnn.
find_path(CUDNN_INCLUDE_DIR cudnn.h
          HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
          PATHS /usr/include/x86_64-linux-gnu /usr/include
          PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY cudnn
             HINTS ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR}
             PATHS /usr/lib/x86_64-linux-gnu
             PATH_SUFFIXES lib64 lib)
if(NOT CUDNN_INCLUDE_DIR OR NOT CUDNN_LIBRARY)
  message(FATAL_ERROR "cuDNN not found (needed by tests/bench/examples); set CUDNN_ROOT")
endif()
message(STATUS "cuDNN: ${CUDNN_LIBRARY} (headers ${CUDNN_INCLUDE_DIR})")
add_library(CuDNN::cudnn UNKNOWN IMPORTED)
set_target_properties(CuDNN::cudnn PROPERTIES IMPORTED_LOCATION ${CUDNN_LIBRARY}
                      INTERFACE_INCLUDE_DIRECTORIES ${CUDNN_INCLUDE_DIR})
