/* A library an attacker would want a privileged process to load: its constructor runs at load
 * time, before any NVML call, and leaves proof of that in the file HOSTILE_LIBRARY_MARKER names
 * (the euid it ran with). Tests check the file never appears. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void hostile_library_loaded(void) {
  const char* marker = getenv("HOSTILE_LIBRARY_MARKER");
  if (marker == NULL || *marker == '\0') return;
  int fd = open(marker, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  char line[64];
  int n = snprintf(line, sizeof line, "loaded with euid %u\n", (unsigned)geteuid());
  if (n > 0) (void)!write(fd, line, (size_t)n);
  close(fd);
}
