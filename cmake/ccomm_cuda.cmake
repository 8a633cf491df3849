# CUDA detection for the CUDA plugin (libccomm-cuda.so) and the GPU tests.
#   CCOMM_WITH_CUDA=AUTO  build it when nvcc and the toolkit are found (/usr/local/cuda or PATH)
#   CCOMM_WITH_CUDA=ON    the same, and fail the configure when they are not
#   CCOMM_WITH_CUDA=OFF   never
# Sets CCOMM_HAVE_CUDA. Device code is built for sm_80 and sm_90 (CMAKE_CUDA_ARCHITECTURES
# overrides): SASS for both, PTX for 90 so newer GPUs can JIT it.
set(CCOMM_HAVE_CUDA OFF)
if(NOT CCOMM_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND AND TARGET CUDA::cudart_static)
      set(CCOMM_HAVE_CUDA ON)
      message(STATUS "ccomm: CUDA plugin enabled (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                     "architectures ${CMAKE_CUDA_ARCHITECTURES})")
    endif()
  endif()
  if(NOT CCOMM_HAVE_CUDA)
    if(CCOMM_WITH_CUDA STREQUAL "ON")
      message(FATAL_ERROR "CCOMM_WITH_CUDA=ON but nvcc / the CUDA toolkit were not found")
    endif()
    message(STATUS "ccomm: CUDA plugin disabled (no nvcc / CUDA toolkit found)")
  endif()
endif()
