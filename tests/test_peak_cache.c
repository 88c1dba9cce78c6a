/* The kept peaks (harness/peak_cache.c): a measurement is read back only for the same
 * card, driver, clocks and revision, within the hour and not from the future, whole and
 * with every rate above 0; anything else is measured again. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../harness/peak_cache.h"

static char dir[] = "/tmp/attnbench-peak-cache-XXXXXX";
static char path[1024];
static const double NOW = 1.8e9;

static peak_card_t a_card(void)
{
    peak_card_t c;
    memset(&c, 0, sizeof c);
    strcpy(c.uuid, "GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9");
    strcpy(c.name, "NVIDIA H200");
    c.driver = 12080;
    c.max_sm_mhz = 1980;
    c.max_mem_mhz = 3201;
    strcpy(c.revision, "3a623778d7a0");
    return c;
}

static peak_t a_peak(void)
{
    peak_t p;
    memset(&p, 0, sizeof p);
    p.read_gbps = 4625.25;
    strcpy(p.read_shape, "loads, one CTA a 512 KiB tile, 1024 threads, 8 in flight a thread");
    p.l2_read_gbps = 7733.5;
    p.copy_gbps = 4226;
    p.tc_tflops = 703.125;
    return p;
}

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/attnbench-peak-cache-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    setenv("XDG_CACHE_HOME", dir, 1);
    peak_card_t c = a_card();
    return peak_cache_path(c.uuid, path, sizeof path);
}

static int teardown(void **state)
{
    (void)state;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void a_kept_measurement_reads_back_whole(void **state)
{
    (void)state;
    peak_card_t c = a_card();
    peak_t p = a_peak(), got;
    memset(&got, 0x5a, sizeof got);
    assert_int_equal(peak_cache_store(path, &c, NOW, &p), 0);   /* makes dir/attnbench */
    double at = -1;
    assert_int_equal(peak_cache_load(path, &c, NOW + 60, &got, &at), 0);
    assert_true(at == NOW);
    assert_true(got.read_gbps == p.read_gbps && got.l2_read_gbps == p.l2_read_gbps);
    assert_true(got.copy_gbps == p.copy_gbps && got.tc_tflops == p.tc_tflops);
    assert_string_equal(got.read_shape, p.read_shape);
}

static void another_card_driver_clock_or_revision_measures_again(void **state)
{
    (void)state;
    peak_card_t c = a_card();
    peak_t p = a_peak(), got = a_peak();
    got.read_gbps = -7;
    double at = -1;
    assert_int_equal(peak_cache_store(path, &c, NOW, &p), 0);
    peak_card_t other[6];
    for (int i = 0; i < 6; ++i) other[i] = c;
    other[0].uuid[5] ^= 1;
    strcpy(other[1].name, "NVIDIA H100 80GB HBM3");
    other[2].driver = 12090;
    other[3].max_sm_mhz = 1755;
    other[4].max_mem_mhz = 2619;
    strcpy(other[5].revision, "249e956c0ffe");
    for (int i = 0; i < 6; ++i) assert_int_equal(peak_cache_load(path, &other[i], NOW, &got, &at), -1);
    assert_true(got.read_gbps == -7 && at == -1);   /* untouched */
    assert_int_equal(peak_cache_load(path, &c, NOW, &got, &at), 0);
}

static void an_old_or_future_measurement_measures_again(void **state)
{
    (void)state;
    peak_card_t c = a_card();
    peak_t p = a_peak(), got;
    double at;
    assert_int_equal(peak_cache_store(path, &c, NOW, &p), 0);
    assert_int_equal(peak_cache_load(path, &c, NOW + PEAK_CACHE_MAX_AGE_S, &got, &at), 0);
    assert_int_equal(peak_cache_load(path, &c, NOW + PEAK_CACHE_MAX_AGE_S + 1, &got, &at), -1);
    assert_int_equal(peak_cache_load(path, &c, NOW - 1, &got, &at), -1);
}

static void write_file(const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void a_damaged_file_measures_again(void **state)
{
    (void)state;
    peak_card_t c = a_card();
    peak_t p = a_peak(), got;
    double at;
    assert_int_equal(peak_cache_store(path, &c, NOW, &p), 0);
    /* cut short */
    FILE *f = fopen(path, "r");
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char half[4096];
    snprintf(half, n / 2 + 1, "%s", text);
    write_file(half);
    assert_int_equal(peak_cache_load(path, &c, NOW, &got, &at), -1);
    /* a rate of 0, and a rate missing */
    peak_t zero = a_peak();
    zero.tc_tflops = 0;
    assert_int_equal(peak_cache_store(path, &c, NOW, &zero), 0);
    assert_int_equal(peak_cache_load(path, &c, NOW, &got, &at), -1);
    write_file("{\"uuid\": \"GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9\", \"name\": \"NVIDIA H200\", "
               "\"driver\": 12080, \"max_sm_mhz\": 1980, \"max_mem_mhz\": 3201, \"revision\": "
               "\"3a623778d7a0\", \"measured_at\": 1.8e9, \"read_gbps\": 4625, \"read_shape\": \"x\", "
               "\"l2_read_gbps\": 7733, \"copy_gbps\": 4226}");
    assert_int_equal(peak_cache_load(path, &c, NOW, &got, &at), -1);
    /* not a file of ours at all */
    write_file("peak 4625\n");
    assert_int_equal(peak_cache_load(path, &c, NOW, &got, &at), -1);
    /* no file */
    unlink(path);
    assert_int_equal(peak_cache_load(path, &c, NOW, &got, &at), -1);
}

static void the_file_lies_under_the_cache_home(void **state)
{
    (void)state;
    char p[256], want[256];
    setenv("XDG_CACHE_HOME", "/x/cache", 1);
    assert_int_equal(peak_cache_path("GPU-1", p, sizeof p), 0);
    assert_string_equal(p, "/x/cache/attnbench/peak-GPU-1.json");
    /* a relative XDG_CACHE_HOME is ignored, as the XDG spec says */
    setenv("XDG_CACHE_HOME", "rel", 1);
    setenv("HOME", "/home/u", 1);
    assert_int_equal(peak_cache_path("GPU-1", p, sizeof p), 0);
    snprintf(want, sizeof want, "/home/u/.cache/attnbench/peak-GPU-1.json");
    assert_string_equal(p, want);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    assert_int_equal(peak_cache_path("GPU-1", p, sizeof p), -1);
    assert_string_equal(p, "");
    setenv("HOME", "/home/u", 1);
    assert_int_equal(peak_cache_path("GPU-1", p, 12), -1);   /* too long for the buffer */
    assert_string_equal(p, "");
    setenv("XDG_CACHE_HOME", dir, 1);
}

static void an_unwritable_directory_is_no_error_of_the_run(void **state)
{
    (void)state;
    peak_card_t c = a_card();
    peak_t p = a_peak();
    char blocked[1100];
    /* a file where the directory should be */
    snprintf(blocked, sizeof blocked, "%s/plain", dir);
    FILE *f = fopen(blocked, "w");
    assert_non_null(f);
    fclose(f);
    char inside[1200];
    snprintf(inside, sizeof inside, "%s/attnbench/peak-x.json", blocked);
    assert_int_equal(peak_cache_store(inside, &c, NOW, &p), -1);
    assert_int_equal(peak_cache_store("", &c, NOW, &p), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_kept_measurement_reads_back_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(another_card_driver_clock_or_revision_measures_again, setup, teardown),
        cmocka_unit_test_setup_teardown(an_old_or_future_measurement_measures_again, setup, teardown),
        cmocka_unit_test_setup_teardown(a_damaged_file_measures_again, setup, teardown),
        cmocka_unit_test_setup_teardown(the_file_lies_under_the_cache_home, setup, teardown),
        cmocka_unit_test_setup_teardown(an_unwritable_directory_is_no_error_of_the_run, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
