import { formatUsdc } from '../../money/usdc.ts';
import type { DayVolume } from '../../payments/volume.ts';
import { type Html, html } from '../kit/html.ts';

const WIDTH = 600;
const HEIGHT = 140;
/** Even an empty day shows as a thin line on the baseline. */
const MIN_BAR = 2;

const dayLabel = (day: number) => new Date(day).toISOString().slice(0, 10);

/**
 * The daily volume as a bar chart: an inline SVG with no style attribute (the page's CSP forbids
 * them; the bars take their colour from the stylesheet's classes). Each bar has a title with its day
 * and amount; the chart as a whole is an image whose description says the total and the best day.
 * The axis's dates are HTML under it, so they keep their size on a phone.
 */
export function dailyVolumeChart(daily: DayVolume[]): Html {
  let max = 0n;
  for (const d of daily) if (d.usdc > max) max = d.usdc;
  const step = WIDTH / daily.length;
  const barWidth = Math.max(1, step * 0.7);
  const bars = daily.map((d, index) => {
    const height = max === 0n ? MIN_BAR : Math.max(MIN_BAR, Number((d.usdc * BigInt(HEIGHT - MIN_BAR)) / max));
    const x = (index * step + (step - barWidth) / 2).toFixed(1);
    const label = `${dayLabel(d.day)}: ${formatUsdc(d.usdc)} USDC, ${d.count} payment${d.count === 1 ? '' : 's'}`;
    return html`<rect class="${d.usdc > 0n ? 'bar' : 'bar bar-empty'}" x="${x}" y="${HEIGHT - height}" width="${barWidth.toFixed(1)}" height="${height}"><title>${label}</title></rect>`;
  });
  const best = daily.reduce<DayVolume | undefined>((b, d) => (d.usdc > 0n && (!b || d.usdc > b.usdc) ? d : b), undefined);
  const total = daily.reduce((sum, d) => sum + d.usdc, 0n);
  const description = best
    ? `${formatUsdc(total)} USDC over ${daily.length} days; the best day was ${dayLabel(best.day)} with ${formatUsdc(best.usdc)} USDC.`
    : `No payments in the last ${daily.length} days.`;
  const first = daily[0];
  return html`<figure class="chart"><svg viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="chart-title chart-desc" preserveAspectRatio="none" focusable="false">
<title id="chart-title">Paid volume per day, in USDC</title><desc id="chart-desc">${description}</desc>
<line class="axis" x1="0" y1="${HEIGHT - 0.5}" x2="${WIDTH}" y2="${HEIGHT - 0.5}"/>${bars}</svg>
<figcaption class="chart-axis"><span>${first ? dayLabel(first.day) : ''}</span><span>Highest day: ${formatUsdc(max)} USDC</span><span>Today</span></figcaption></figure>`;
}
