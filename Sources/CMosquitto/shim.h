#ifndef MOBILITYWATCH_CMOSQUITTO_SHIM_H
#define MOBILITYWATCH_CMOSQUITTO_SHIM_H
/* libmosquitto (Debian libmosquitto-dev). mqtt_protocol.h holds the MQTT 5 property constants. */
#include <mosquitto.h>
#include <mqtt_protocol.h>
#endif
