// The HTML report in headless Chromium: it renders, the charts have size, the sleep markers are
// there and where they belong, labels do not collide, and the page needs nothing from outside.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderHtml } from '../../src/report/html.js';
import { firstPhase } from './shipped.js';

const CHROMIUM = '/usr/bin/chromium';
const RESULTS = resolve(import.meta.dirname, '../results');
const have = existsSync(CHROMIUM);
if (!have) console.warn(`*** ${CHROMIUM} not found (apt-get install chromium): skipping the HTML report rendering test ***`);

interface Rect { x: number; y: number; width: number; height: number }

describe.skipIf(!have)('HTML report in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  });
  afterAll(async () => browser?.close());

  it('renders both charts per device with the current and optimal sleep marked, self-contained, no console errors', async () => {
    const html = renderHtml(await firstPhase());
    expect(html).not.toMatch(/<script|<link|@import|url\(|https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    mkdirSync(RESULTS, { recursive: true });
    const file = resolve(RESULTS, 'report.html');
    writeFileSync(file, html);

    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const problems: string[] = [];
    const requests: string[] = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    await page.screenshot({ path: resolve(RESULTS, 'report.png'), fullPage: true });
    expect(problems).toEqual([]);
    expect(requests).toEqual([pathToFileURL(file).href]);

    const devices = await page.$$eval('section.device[id^="device-"]', (els) => els.map((e) => e.id));
    expect(devices).toEqual(['device-nvme0n1', 'device-nvme1n1']);
    for (const id of devices) {
      const got = await page.$eval(`#${id}`, (sec) => {
        const rect = (e: Element | null): Rect | null => {
          if (!e) return null;
          const r = e.getBoundingClientRect();
          return { x: r.x, y: r.y, width: r.width, height: r.height };
        };
        const lat = sec.querySelector('svg.chart.latency')!;
        const pol = sec.querySelector('svg.chart.policies')!;
        const texts = [...pol.querySelectorAll('.point-label'), ...lat.querySelectorAll('.marker-label')].map((t) => ({ text: t.textContent, r: rect(t)! }));
        return {
          latency: rect(lat),
          policies: rect(pol),
          bars: [...lat.querySelectorAll('rect.bar')].map((b) => rect(b)!),
          deviceTime: rect(lat.querySelector('path.device-time')),
          current: rect(lat.querySelector('[data-marker="current"] line')),
          optimal: rect(lat.querySelector('[data-marker="optimal"] line')),
          currentLabel: lat.querySelector('[data-marker="current"] text')?.textContent,
          optimalLabel: lat.querySelector('[data-marker="optimal"] text')?.textContent,
          points: [...pol.querySelectorAll('[data-point]')].map((p) => ({ name: p.getAttribute('data-point'), r: rect(p.querySelector('circle, path'))! })),
          texts,
          cardCurrent: sec.querySelector('.card.current .value')?.textContent,
          cardOptimal: sec.querySelector('.card.optimal .value')?.textContent,
          rows: sec.querySelectorAll('table.whatif tbody tr').length,
        };
      });
      for (const svg of [got.latency!, got.policies!]) {
        expect(svg.width, id).toBeGreaterThan(300);
        expect(svg.height, id).toBeGreaterThan(120);
      }
      expect(got.bars.length, id).toBeGreaterThan(0);
      expect(got.bars.every((b) => b.width > 0 && b.height >= 0)).toBe(true);
      expect(got.deviceTime!.width).toBeGreaterThan(0);
      // Both markers drawn inside the chart, labelled with the sleeps the cards show.
      for (const m of [got.current!, got.optimal!]) {
        expect(m.height, id).toBeGreaterThan(100);
        expect(m.x).toBeGreaterThanOrEqual(got.latency!.x);
        expect(m.x).toBeLessThanOrEqual(got.latency!.x + got.latency!.width);
      }
      expect(got.currentLabel).toBe(`current sleep ${got.cardCurrent}`);
      expect(got.optimalLabel).toBe(`optimal sleep ${got.cardOptimal}`);
      // 7 policies besides best_static, plus optimal and current.
      expect(got.points.map((p) => p.name).sort()).toEqual(
        ['blkmq_half_mean', 'classic', 'current', 'iouring_half_min', 'min_minus_wake', 'optimal', 'oracle', 'three_quarter_mean'].sort(),
      );
      expect(got.points.every((p) => p.r.width > 0 && p.r.height > 0)).toBe(true);
      expect(got.rows).toBe(8);
      // No two labels overlap (1 px tolerance for antialiasing).
      for (let i = 0; i < got.texts.length; i++) {
        for (let j = i + 1; j < got.texts.length; j++) {
          const [a, b] = [got.texts[i]!.r, got.texts[j]!.r];
          const overlap = a.x < b.x + b.width - 1 && b.x < a.x + a.width - 1 && a.y < b.y + b.height - 1 && b.y < a.y + a.height - 1;
          expect(overlap, `${id}: "${got.texts[i]!.text}" overlaps "${got.texts[j]!.text}"`).toBe(false);
        }
      }
      // Order on the log axis follows the sleeps: nvme0n1 sleeps far too little, nvme1n1 too much.
      if (id === 'device-nvme0n1') expect(got.current!.x).toBeLessThan(got.optimal!.x);
      else expect(got.current!.x).toBeGreaterThan(got.optimal!.x);
    }
    await page.close();
  });
});
