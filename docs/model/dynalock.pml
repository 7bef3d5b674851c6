/*
 * dynalock.pml: a model of dynalock's lock protocol (lib/coord) for the spin model
 * checker. See README.md next to it for what it covers, what it leaves out and how to
 * run it.
 *
 * One lock item, N processes that acquire, renew, release, take over and write to a
 * fenced resource, in discrete time. Every action takes no time; time moves (the Time
 * process) only when no process can act, so all the slowness there is comes from
 * explicit choices: a request's delay, a lost answer, a pause, a frozen clock.
 *
 * Switches (spin -D...):
 *   N=2|3          processes (default 2)
 *   TMAX=t         the horizon in ticks (default 11; scripts/check-model uses 6 and 10)
 *   OFFMAX, LOSSMAX, PAUSEMAX, FREEZEMAX, MAXACQ   the bounds below (0 turns a fault off)
 *   PROGRESS       process N-1 contends for ever; checks that the lock never goes
 *                  without a live holder for more than BOUND ticks
 *   BOUND=b        the bound of PROGRESS (default 6)
 *   DRIFT          one process's clock may run fast: it gains a tick, at most DRIFT times
 *   NO_EXCL        do not check that one process at a time believes it holds the lock
 *   NO_TOKEN_CHECK do not check at grant time that a token is never handed out twice
 *   The broken variants (each removes one rule of the protocol):
 *   BUG_HOLDER_TS  takeover when the contender's clock passes the holder's timestamp
 *                  in the item plus a lease, instead of a lease after its own first read
 *   BUG_NO_FENCE   a takeover does not raise the fencing token
 *   BUG_SAME_RVN   a renewal keeps the record version number
 *   BUG_FROM_ANSWER the holder counts its lease from the answer, not from the send
 */

#ifndef N
#define N 2
#endif
#define L 3             /* the lease, in ticks */
#define R 1             /* renewal period: a third of the lease */
#define POLL 1          /* poll period while another holds it: a third of the lease */
#ifndef TMAX
#define TMAX 11         /* the horizon: real time stops here */
#endif
#ifndef OFFMAX
#define OFFMAX 1        /* how far ahead of process 0's clock the others' may start */
#endif
#ifndef LOSSMAX
#define LOSSMAX 1       /* answers lost in one run (request applied, answer never came) */
#endif
#ifndef FREEZEMAX
#define FREEZEMAX 1     /* frozen pauses (the process and its clock stop) in one run */
#endif
#ifndef PAUSEMAX
#define PAUSEMAX 1      /* pauses (the process stops, its clock runs) in one run */
#endif
#ifndef MAXACQ
#ifdef PROGRESS
#define MAXACQ 3
#else
#define MAXACQ 2        /* acquires per process */
#endif
#endif
#ifndef BOUND
#define BOUND 6
#endif

#ifdef PROGRESS
#define CONTENDER(i) ((i) == N - 1)
#else
#define CONTENDER(i) false
#endif

/* ------------------------------------------------------------------ the world */

byte now;               /* real time, seen by no process */
byte clk[N];            /* each process's monotonic clock */
bool frozen[N];         /* its clock stands still */
bool crashed[N];
byte drifts, losses, freezes, pauses;

/* The lock item in DynamoDB; each write is one atomic conditional write. */
byte i_owner;           /* 0: free; else the owner id of one acquire */
byte i_rvn;             /* record version number */
byte i_fence;           /* fencing token */
#ifdef BUG_HOLDER_TS
byte i_ts;              /* the writer's clock at its send: read only by the broken rule */
#define SET_TS(v) i_ts = v
#define TS i_ts
#else
#define SET_TS(v) skip
#define TS 0
#endif
byte i_gen;             /* ghost: which grant wrote the owner */
byte rvn_ctr, gen_ctr;  /* new rvns; grants, in the order the item took them */
byte last_token;        /* ghost: the highest token granted */

/* The fenced resource: accepts a write whose token is >= the highest it accepted. */
byte res_token;
byte res_gen;           /* ghost: the grant of the last accepted write */

/* What each process believes, for the properties. */
bool holding[N];
byte hexp[N];           /* expiry of its lease on its own clock */
bool tainted[N];        /* its clock stood still during this lease */
byte gap;               /* PROGRESS: when the lock last had a live holder */

#define BELIEVES(j) (holding[j] && clk[j] < hexp[j] && !tainted[j])
#define LIVE(j) (holding[j] && clk[j] < hexp[j] && !crashed[j])
#if N == 2
#define ONE_HOLDER (!(BELIEVES(0) && BELIEVES(1)))
#define SOME_LIVE (LIVE(0) || LIVE(1))
#elif N == 3
#define ONE_HOLDER (!(BELIEVES(0) && BELIEVES(1)) && !(BELIEVES(0) && BELIEVES(2)) && \
                    !(BELIEVES(1) && BELIEVES(2)))
#define SOME_LIVE (LIVE(0) || LIVE(1) || LIVE(2))
#endif

#ifdef PROGRESS
#define MARK_LIVE if :: holding[i] -> gap = now :: else -> skip fi
#else
#define MARK_LIVE skip
#endif

#ifdef NO_EXCL
#define CHECK_EXCL skip
#else
#define CHECK_EXCL assert(ONE_HOLDER)
#endif

/* Due for a takeover: a whole lease since this process first read the rvn, on its own
 * clock; the broken rule compares its clock with the holder's timestamp. */
#ifdef BUG_HOLDER_TS
#define DUE_AT (s_ts + L)
#else
#define DUE_AT (first + L)
#endif

/* An answer's delay: it comes back at once or a tick later. A request applies when it
 * is sent: a later apply only makes a contender's first read later, which is safer. */
inline delay()
{
    if
    :: skip
    :: t0 = now; (now > t0)
    fi
}

/* A retry by the client (nr set: the request was sent before) goes a tick later. */
inline retry_wait()
{
    if
    :: nr != 0 -> t0 = now; (now > t0)
    :: else -> skip
    fi
}

/* Remembers the holder in the item (owner, rvn), keeping the time of the first read
 * when it is the one already seen (dl_seen_put). */
inline remember(o, r, ts)
{
    if
    :: !(have_seen && s_owner == o && s_rvn == r) ->
        have_seen = true; s_owner = o; s_rvn = r; s_ts = ts; first = clk[i]
    :: else -> skip
    fi
}

#define TICK(j) if :: !frozen[j] -> clk[j]++ :: else -> skip fi

active proctype Time()
{
end:
    do
    :: timeout ->
        atomic {
            if
            :: now >= TMAX -> break
            :: else -> skip
            fi;
            now++;
            TICK(0); TICK(1);
#if N > 2
            TICK(2);
#endif
#ifdef DRIFT
            if
            :: drifts < DRIFT && !frozen[0] -> drifts++; clk[0]++
            :: skip
            fi;
#endif
            CHECK_EXCL;
#ifdef PROGRESS
            if
            :: SOME_LIVE -> gap = now
            :: else -> assert(now - gap <= BOUND)
            fi
#endif
        }
    od
}

/* A process: a lock table with one lease at a time. Each atomic block below is one
 * step: at most one access to the item or the resource, with the local work around it
 * (what a process does with its own variables and its own clock commutes with the
 * others' steps, since clocks move only between steps). A block that waits for time
 * gives the other processes their turn while it waits. */
proctype P(byte i)
{
    byte k;                             /* acquires so far */
    byte myowner;                       /* owner id of the current acquire */
    bool have_seen;                     /* the lock table's seen map */
    byte s_owner, s_rvn, s_ts, first;
    bool ok;
    byte nr, s, t0, p;                  /* new rvn, send time, scratch */
    byte sn_owner, sn_rvn, sn_fence, sn_ts, sn_gen;   /* the item in an answer */
    byte tok, mygen, nxt;               /* the lease: token, grant, next renewal */
    bool fenced_once;

idle:
    atomic {
        holding[i] = false; tainted[i] = false; hexp[i] = 0;
        tok = 0; mygen = 0; nxt = 0; s = 0; nr = 0; ok = false; fenced_once = false;
        if
        :: k < MAXACQ ->
            k++; myowner = i * MAXACQ + k;
            if
            :: have_seen -> goto aread          /* seen held before: poll first */
            :: else -> goto try_write           /* not seen held: write at once */
            fi
        :: !CONTENDER(i) -> t0 = now; (now > t0); t0 = 0; goto idle  /* acquires later */
        :: !CONTENDER(i) -> goto end            /* stops contending */
        fi
    }

aread:
    /* A poll: one strongly consistent read. */
    atomic {
        if
        :: i_owner == 0 -> have_seen = false; s_owner = 0; s_rvn = 0; s_ts = 0; first = 0
        :: else -> remember(i_owner, i_rvn, TS)
        fi;
        t0 = 0;
        if
        :: i_owner == 0 || clk[i] >= DUE_AT -> goto try_write
        :: else -> goto poll_wait
        fi
    }

try_write:
    atomic {
        s = clk[i]; nr = 0;
send:
        retry_wait();
        /* attribute_not_exists(owner) OR (owner = :seen_owner AND rvn = :seen_rvn) */
        if
        :: nr == 0 -> rvn_ctr++; nr = rvn_ctr   /* the request's new rvn */
        :: else -> skip                         /* a retry sends the same request */
        fi;
        ok = (i_owner == 0 || (have_seen && i_owner == s_owner && i_rvn == s_rvn));
        if
        :: ok ->
#ifdef BUG_NO_FENCE
            if
            :: i_owner == 0 -> i_fence++
            :: else -> skip
            fi;
#else
            i_fence++;
#endif
            i_owner = myowner; i_rvn = nr; SET_TS(s);
            gen_ctr++; i_gen = gen_ctr;
#ifndef NO_TOKEN_CHECK
            assert(i_fence > last_token);       /* no token handed to two owners */
#endif
            last_token = i_fence
        :: else -> skip
        fi;
        sn_owner = i_owner; sn_rvn = i_rvn; sn_fence = i_fence; sn_ts = TS; sn_gen = i_gen;
        if
        :: losses < LOSSMAX ->
            losses++;
            if
            :: goto send                        /* the client retries the same request */
            :: goto idle                        /* the acquire fails with an error */
            fi
        :: skip
        fi;
        delay();
        t0 = 0; nr = 0;
        if
        :: ok -> goto granted
        :: !ok && sn_owner == myowner -> goto granted  /* a retry found its first attempt */
        :: !ok && sn_owner != myowner ->
            remember(sn_owner, sn_rvn, sn_ts);
            sn_owner = 0; sn_rvn = 0; sn_fence = 0; sn_ts = 0; sn_gen = 0; s = 0;
            goto poll_wait
        fi
    }

poll_wait:
    /* The next poll: a third of the lease from now, or sooner when the holder is due. */
    atomic {
        t0 = clk[i] + POLL;
        if
        :: DUE_AT < t0 -> t0 = DUE_AT
        :: else -> skip
        fi;
        (clk[i] >= t0);
        t0 = 0;
        goto aread
    }

granted:
    atomic {
        have_seen = false; s_owner = 0; s_rvn = 0; s_ts = 0; first = 0;
        tok = sn_fence; mygen = sn_gen; fenced_once = false;
        sn_owner = 0; sn_rvn = 0; sn_fence = 0; sn_ts = 0; sn_gen = 0;
#ifdef BUG_FROM_ANSWER
        s = clk[i];
#endif
        hexp[i] = s + L; nxt = s + R; tainted[i] = false; s = 0;
        holding[i] = (clk[i] < hexp[i]);        /* an answer after a whole lease: ended */
        CHECK_EXCL;
        MARK_LIVE;
        if
        :: !holding[i] -> goto idle
        :: else -> goto hold
        fi
    }

hold:
    atomic {
        if
        :: clk[i] >= hexp[i] -> goto idle               /* ran out: expired */
        :: clk[i] < hexp[i] && clk[i] >= nxt -> goto renew
        :: clk[i] < hexp[i] && clk[i] < nxt ->
            if
            :: !fenced_once -> fenced_once = true; goto fenced
            :: !CONTENDER(i) -> goto release
            :: !CONTENDER(i) -> crashed[i] = true; holding[i] = false; goto end
            :: t0 = now; (now > t0); t0 = 0; goto hold  /* works on */
            fi
        fi
    }

fenced:
    /* Checks its lease on its own clock, then sends a write carrying its token; it may
     * stop in between, with its clock running (a pause) or stopped (a frozen VM). */
    atomic {
        if
        :: skip
        :: pauses < PAUSEMAX ->
            pauses++;
            if
            :: p = L :: p = L + 1 :: p = L + 2
            fi;
            t0 = now; (now >= t0 + p)
        :: freezes < FREEZEMAX ->
            freezes++;
            if
            :: p = L :: p = L + 2
            fi;
            tainted[i] = true; frozen[i] = true; t0 = now;
            (now >= t0 + p);
            frozen[i] = false
        fi;
        t0 = 0; p = 0;
        if
        :: tok >= res_token ->
            assert(mygen >= res_gen);           /* never a write of an older lease */
            res_token = tok; res_gen = mygen
        :: else -> skip                         /* refused */
        fi;
        goto hold
    }

renew:
    /* A new rvn on condition that the owner is still this lease's. */
    atomic {
        s = clk[i]; nr = 0;
        nxt = clk[i] + R;                       /* if it fails: again a tick later */
rsend:
        retry_wait();
        if
        :: nr == 0 -> rvn_ctr++; nr = rvn_ctr
        :: else -> skip
        fi;
        ok = (i_owner == myowner);
        if
        :: ok ->
#ifndef BUG_SAME_RVN
            i_rvn = nr;
#endif
            SET_TS(s)
        :: else -> skip
        fi;
        if
        :: losses < LOSSMAX ->
            losses++;
            if
            :: goto rsend                       /* the client retries the same request */
            :: s = 0; nr = 0; ok = false; goto hold  /* an error: the heartbeat tries again */
            fi
        :: skip
        fi;
        delay();
        t0 = 0; nr = 0;
        if
        :: clk[i] >= hexp[i] -> goto idle              /* a late answer: expired */
        :: clk[i] < hexp[i] && ok ->
#ifdef BUG_FROM_ANSWER
            s = clk[i];
#endif
            hexp[i] = s + L; nxt = s + R; s = 0; ok = false;
            CHECK_EXCL;
            goto hold
        :: clk[i] < hexp[i] && !ok -> goto idle        /* taken over */
        fi
    }

release:
    /* Removes the owner on condition that it is still this lease's; the fence stays. */
    atomic {
        holding[i] = false;
        if
        :: i_owner == myowner -> i_owner = 0
        :: else -> skip
        fi;
        goto idle
    }

end:
    atomic {
        holding[i] = false; hexp[i] = 0; tainted[i] = false;
        k = 0; myowner = 0; have_seen = false; s_owner = 0; s_rvn = 0; s_ts = 0; first = 0;
        tok = 0; mygen = 0; nxt = 0; fenced_once = false
    }
}

init
{
    byte o;
    atomic {
        /* Clocks start apart: process 0 at 0, the others anywhere in 0..OFFMAX. Only
         * the broken rule BUG_HOLDER_TS ever compares two clocks. */
        select(o : 0 .. OFFMAX); clk[1] = o;
#if N > 2
        select(o : 0 .. OFFMAX); clk[2] = o;
#endif
        o = 0;
        run P(0); run P(1);
#if N > 2
        run P(2);
#endif
    }
}
