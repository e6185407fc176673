/*
 * A real Kafka-protocol cluster on loopback for Belfry's tests: librdkafka's mock cluster
 * (librdkafka-dev, rdkafka_mock.h), no JVM, no Docker.
 *
 *   mock-cluster [brokers]     prints "bootstrap <host:port,...>" then serves until stdin closes.
 *
 * Commands on stdin, one a line, each answered "ok" or "error <why>" on stdout:
 *   topic <name> <partitions>  create a topic (replication factor: the broker count)
 *   down <broker id>           the broker closes its connections and refuses new ones
 *   up <broker id>             it accepts them again
 *   error <topic> <code>       metadata of the topic answers this Kafka error code (29: not authorised)
 *   rtt <broker id> <ms>       the broker answers every request that much later (0: at once)
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  int brokers = argc > 1 ? atoi(argv[1]) : 1;
  if (brokers < 1 || brokers > 9) brokers = 1;
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof errstr);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) { fprintf(stderr, "rd_kafka_new: %s\n", errstr); return 1; }
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
  if (!mc) { fprintf(stderr, "rd_kafka_mock_cluster_new failed\n"); return 1; }
  printf("bootstrap %s\n", rd_kafka_mock_cluster_bootstraps(mc));
  fflush(stdout);

  char line[1024];
  while (fgets(line, sizeof line, stdin)) {
    char cmd[32], name[512];
    int n = 0, ms = 0;
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (sscanf(line, "topic %511s %d", name, &n) == 2) {
      err = rd_kafka_mock_topic_create(mc, name, n, brokers);
    } else if (sscanf(line, "down %d", &n) == 1) {
      err = rd_kafka_mock_broker_set_down(mc, n);
    } else if (sscanf(line, "up %d", &n) == 1) {
      err = rd_kafka_mock_broker_set_up(mc, n);
    } else if (sscanf(line, "rtt %d %d", &n, &ms) == 2) {
      err = rd_kafka_mock_broker_set_rtt(mc, n, ms);
    } else if (sscanf(line, "error %511s %d", name, &n) == 2) {
      rd_kafka_mock_topic_set_error(mc, name, (rd_kafka_resp_err_t)n);
    } else if (sscanf(line, "%31s", cmd) == 1) {
      printf("error unknown command %s\n", cmd);
      fflush(stdout);
      continue;
    } else {
      continue;
    }
    if (err) printf("error %s\n", rd_kafka_err2str(err));
    else printf("ok\n");
    fflush(stdout);
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}
