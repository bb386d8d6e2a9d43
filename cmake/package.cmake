# The installable embedding library: `cmake --install build --prefix P` puts the programs under P/bin
# (moe-serve, moe-cli, moe-bench: see where each is defined), the public headers of
# moe::Engine (and moe::Client) under P/include/moe, one static library, libmoe-engine.a, holding
# every object of the engine's components, and the CMake package moe_engine, so that a program
# builds with find_package(moe_engine) and target_link_libraries(app PRIVATE moe::engine).
# The library reuses the components' compiled objects: only the archive is written again.
include(CMakePackageConfigHelpers)

# The headers a moe::Engine user compiles against: engine.h and what it includes, no more.
set(moe_public_headers engine.h engine_options.h engine_settings.h client.h messages.h)

# moe_internal_closure(OUT_TARGETS OUT_EXTERNAL ROOT): the moe_* static libraries ROOT links,
# transitively, and the outside targets they link.
function(moe_internal_closure out_targets out_external root)
  set(seen "")
  set(external "")
  set(pending ${root})
  while(pending)
    list(POP_FRONT pending target)
    if(target IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${target})
    get_target_property(links ${target} LINK_LIBRARIES)
    foreach(link IN LISTS links)
      if(link MATCHES "^moe_" AND TARGET ${link})
        list(APPEND pending ${link})
      elseif(link)
        list(APPEND external ${link})
      endif()
    endforeach()
  endwhile()
  list(REMOVE_DUPLICATES external)
  set(${out_targets} ${seen} PARENT_SCOPE)
  set(${out_external} ${external} PARENT_SCOPE)
endfunction()

moe_internal_closure(moe_package_components moe_package_external moe_embed)

# What a program linking the archive needs besides it: the libraries the components call into.
# The header-only ones (Eigen, nlohmann_json, msgpack) stay inside; Boost's headers are public,
# engine.h being written with Asio. A component that starts linking anything else must be listed
# here and found in moe_engineConfig.cmake.in.
set(moe_package_links spdlog::spdlog fmt::fmt Threads::Threads PkgConfig::PCRE2 PkgConfig::UTF8PROC cppzmq)
set(moe_package_header_only Eigen3::Eigen nlohmann_json::nlohmann_json msgpackc-cxx Boost::headers)
foreach(dependency IN LISTS moe_package_external)
  if(NOT dependency IN_LIST moe_package_links AND NOT dependency IN_LIST moe_package_header_only)
    message(FATAL_ERROR "the engine's components link ${dependency}, which the installed package does not: "
                        "add it to moe_package_links in cmake/package.cmake and to moe_engineConfig.cmake.in")
  endif()
endforeach()

set(moe_package_objects "")
foreach(component IN LISTS moe_package_components)
  list(APPEND moe_package_objects $<TARGET_OBJECTS:${component}>)
endforeach()
add_library(moe_package STATIC ${moe_package_objects})
add_library(moe::engine ALIAS moe_package)
set_target_properties(moe_package PROPERTIES OUTPUT_NAME moe-engine EXPORT_NAME engine LINKER_LANGUAGE CXX)
target_include_directories(moe_package INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                                 $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(moe_package INTERFACE cxx_std_20)
target_link_libraries(moe_package PUBLIC Boost::headers PRIVATE ${moe_package_links})
# A sanitized build's objects call into the sanitizers' runtimes, which only the final link adds.
if(MOE_SANITIZE)
  target_link_options(moe_package INTERFACE -fsanitize=${MOE_SANITIZE})
endif()

# moe::engine_cuda (libmoe-engine-cuda.a, a build with the CUDA backend): moe::engine and the CUDA
# backend, for programs that run --device cuda; moe::engine alone links no CUDA library.
if(MOE_CUDA)
  add_library(moe_package_cuda STATIC $<TARGET_OBJECTS:moe_cuda> $<TARGET_OBJECTS:moe_cuda_kernels>)
  add_library(moe::engine_cuda ALIAS moe_package_cuda)
  set_target_properties(moe_package_cuda PROPERTIES OUTPUT_NAME moe-engine-cuda EXPORT_NAME engine_cuda
                                                    LINKER_LANGUAGE CXX)
  target_link_libraries(moe_package_cuda PUBLIC moe_package PRIVATE CUDA::cudart CUDA::cublas)
  target_link_options(moe_package_cuda INTERFACE "LINKER:--undefined=moe_cuda_backend_linked")
  install(TARGETS moe_package_cuda EXPORT moe_engineTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

list(TRANSFORM moe_public_headers PREPEND ${PROJECT_SOURCE_DIR}/include/moe/)
install(FILES ${moe_public_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/moe)
set(moe_package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/moe_engine)
install(TARGETS moe_package EXPORT moe_engineTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT moe_engineTargets NAMESPACE moe:: DESTINATION ${moe_package_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/moe_engineConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/moe_engineConfig.cmake INSTALL_DESTINATION ${moe_package_dir})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/moe_engineConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/moe_engineConfig.cmake ${PROJECT_BINARY_DIR}/moe_engineConfigVersion.cmake
        DESTINATION ${moe_package_dir})
