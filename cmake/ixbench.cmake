# ix_library(<name> [DEPS <targets>...])
# One static library per src/ directory; its sources are the directory's *.cc files.
# Dependencies must point up the layer list in docs/architecture.md, never down.
function(ix_library name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  if(NOT sources)
    # A layer whose first source has not landed yet: headers only.
    add_library(ix_${name} INTERFACE)
    target_include_directories(ix_${name} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(ix_${name} INTERFACE ${ARG_DEPS})
    return()
  endif()
  add_library(ix_${name} STATIC ${sources})
  target_include_directories(ix_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(ix_${name} PUBLIC ${ARG_DEPS})
endfunction()

