// Logfmt lines on stderr, like the Prometheus exporters: ts=… level=… msg="…" key=value.
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

export type Fields = Record<string, string | number | boolean | undefined>;

export interface Logger {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
}

function fmt(v: string | number | boolean): string {
  const s = String(v);
  return /^[\w./:@+-]+$/.test(s) ? s : JSON.stringify(s);
}

export function createLogger(level: LogLevel, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  const min = LOG_LEVELS.indexOf(level);
  const at = (lvl: LogLevel) => (msg: string, fields: Fields = {}) => {
    if (LOG_LEVELS.indexOf(lvl) < min) return;
    const kv = Object.entries(fields)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => ` ${k}=${fmt(v!)}`)
      .join('');
    write(`ts=${new Date().toISOString()} level=${lvl} msg=${fmt(msg)}${kv}\n`);
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
