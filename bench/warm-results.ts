import { spawn } from 'node:child_process';

/**
 * Every results page once, 4 at a time, before the timed loads (the simulator serialises a
 * result on its first serve), in a process of its own so the bench's CPU and peak RSS stay
 * the sync's.
 */
export function warmResults(url: string, apiKey: string, pages: number): Promise<void> {
  const script = `
    const [url, key, pages] = process.argv.slice(1);
    let next = 1;
    const reader = async () => {
      for (let page = next++; page <= Number(pages); page = next++) {
        const response = await fetch(url + '/api/v2/results?page=' + page, { headers: { authorization: 'Bearer ' + key } });
        if (!response.ok) throw new Error('page ' + page + ': HTTP ' + response.status);
        await response.arrayBuffer();
      }
    };
    await Promise.all(Array.from({ length: 4 }, reader));`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, url, apiKey, String(pages)], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`warming the simulator exited with ${code}`))));
  });
}
