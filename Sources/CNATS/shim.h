#ifndef MOBILITYWATCH_CNATS_SHIM_H
#define MOBILITYWATCH_CNATS_SHIM_H
/* libnats, NATS's C client (Debian libnats-dev): mobilityd's start check of the JetStream
   streams and consumers behind the partition sessions, and the partitions' pull consumers. */
#include <nats/nats.h>
#endif
