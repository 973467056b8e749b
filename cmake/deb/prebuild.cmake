# SPDX-License-Identifier: MIT
# CPack pre-build script for the Debian package (CPACK_PRE_BUILD_SCRIPTS): runs on the staged
# tree before it is packed, and makes it what Debian policy asks of a package, where a plain
# `cmake --install` is left as it is: man pages gzipped (-9n: no name or time stamp, so that
# builds are reproducible), the copyright file and a changelog under /usr/share/doc/diskgeo.
# CPACK_TEMPORARY_DIRECTORY is the staged tree (its usr/ is the installation prefix).
set(root "${CPACK_TEMPORARY_DIRECTORY}")
find_program(GZIP gzip REQUIRED)

file(GLOB_RECURSE pages "${root}/usr/share/man/man*/*")
foreach(page IN LISTS pages)
  if(NOT page MATCHES "\\.gz$")
    execute_process(COMMAND "${GZIP}" -9nf "${page}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "gzip ${page} failed")
    endif()
  endif()
endforeach()

# strip(1) leaves the compiler's .comment section (lintian: binary-has-unneeded-section)
find_program(OBJCOPY objcopy)
file(GLOB bins "${root}/usr/bin/*")
foreach(bin IN LISTS bins)
  file(READ "${bin}" magic LIMIT 4 HEX)
  if(OBJCOPY AND magic STREQUAL "7f454c46")
    execute_process(COMMAND "${OBJCOPY}" --remove-section=.comment "${bin}")
  endif()
endforeach()

set(doc "${root}/usr/share/doc/diskgeo")
file(MAKE_DIRECTORY "${doc}")
file(COPY_FILE "${CPACK_DISKGEO_SOURCE_DIR}/cmake/deb/copyright" "${doc}/copyright")
# A native package's changelog, from the version (Debian policy 12.7).
string(TIMESTAMP now "%a, %d %b %Y %H:%M:%S +0000" UTC)
if(DEFINED ENV{SOURCE_DATE_EPOCH})
  string(TIMESTAMP now "%a, %d %b %Y %H:%M:%S +0000" UTC)
endif()
file(WRITE "${doc}/changelog"
  "diskgeo (${CPACK_PACKAGE_VERSION}) unstable; urgency=medium\n\n"
  "  * Release ${CPACK_PACKAGE_VERSION}; see /usr/share/doc/diskgeo/README.md.\n\n"
  " -- ${CPACK_PACKAGE_CONTACT}  ${now}\n")
execute_process(COMMAND "${GZIP}" -9nf "${doc}/changelog")
file(GLOB_RECURSE all "${root}/*")
foreach(f IN LISTS all)
  if(f MATCHES "/usr/share/" AND NOT IS_DIRECTORY "${f}")
    file(CHMOD "${f}" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  endif()
endforeach()
