/* The closing time lines of run, sweep and verify (timeline.h). */
#include "timeline.h"

#include <string.h>

void timeline_init(timeline_t *t, double start)
{
    memset(t, 0, sizeof *t);
    t->start = start;
}

static void spent_add(pool_spent_t *sum, const pool_spent_t *s)
{
    sum->total_s += s->total_s;
    sum->peak_s += s->peak_s;
    sum->verify_s += s->verify_s;
    sum->timing_s += s->timing_s;
}

/* The slot's entry, or NULL for a slot beyond the table (no time line for it). */
static timeline_slot_t *slot_of(timeline_t *t, int slot)
{
    if (slot < 0 || slot >= TIMELINE_SLOTS_MAX) return NULL;
    if (slot >= t->slots) t->slots = slot + 1;
    return &t->slot[slot];
}

void timeline_ready(timeline_t *t, int slot, const pool_spent_t *spent)
{
    timeline_slot_t *s = slot_of(t, slot);
    if (s) spent_add(&s->setup, spent);
}

void timeline_row(timeline_t *t, int slot, const pool_spent_t *spent, double now)
{
    timeline_slot_t *s = slot_of(t, slot);
    if (!s) return;
    s->rows++;
    spent_add(&s->jobs, spent);
    s->last_at = now - t->start;
}

void timeline_print(FILE *f, const timeline_t *t, int rows, double end, const int *devices)
{
    fprintf(f, "# %d rows in %.1f s", rows, end - t->start);
    if (t->listed_s > 0) fprintf(f, " (listing the GPUs %.1f s)", t->listed_s);
    fprintf(f, "\n");
    for (int i = 0; i < t->slots; ++i) {
        const timeline_slot_t *s = &t->slot[i];
        fprintf(f, "# device %d: set-up %.1f s", devices ? devices[i] : 0, s->setup.total_s);
        if (s->setup.peak_s > 0) fprintf(f, " (peaks %.1f s)", s->setup.peak_s);
        fprintf(f, ", %d rows %.1f s", s->rows, s->jobs.total_s);
        if (s->jobs.verify_s > 0 && s->jobs.timing_s > 0)
            fprintf(f, " (verification %.1f s, timing %.1f s)", s->jobs.verify_s, s->jobs.timing_s);
        else if (s->jobs.verify_s > 0 || s->jobs.timing_s > 0)
            fprintf(f, " (%s %.1f s)", s->jobs.verify_s > 0 ? "verification" : "timing",
                    s->jobs.verify_s > 0 ? s->jobs.verify_s : s->jobs.timing_s);
        if (s->rows) fprintf(f, ", last at %.1f s", s->last_at);
        fprintf(f, "\n");
    }
}
