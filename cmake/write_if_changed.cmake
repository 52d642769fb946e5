# write_if_changed(<path> <content>): rewrite a generated file only when its content changes, so
# regenerating it at every build does not force recompiles and relinks.
function(write_if_changed path content)
  set(old "")
  if(EXISTS ${path})
    file(READ ${path} old)
  endif()
  if(NOT old STREQUAL content)
    file(WRITE ${path} "${content}")
  endif()
endfunction()
